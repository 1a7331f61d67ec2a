"""Reading the environment: every variable is parsed once, and a malformed value stops start-up
with a message that names the variable."""

import json
import os
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no, on/off), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {value}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int_map(name: str, default: dict[str, int], *, minimum: int = 0) -> dict[str, int]:
    """`key=n,key=n` (e.g. `writer=16,main=48`) as {key: n}, or `default` when unset or empty."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return dict(default)
    mapping = {}
    for item in (part.strip() for part in raw.split(",")):
        key, sep, value = (piece.strip() for piece in item.partition("="))
        if not item or not sep or not key:
            raise ImproperlyConfigured(f"{name} must be key=number pairs separated by commas, got {raw!r}")
        try:
            mapping[key] = int(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name} must give {key} an integer, got {value!r}") from None
        if mapping[key] < minimum:
            raise ImproperlyConfigured(f"{name} must give {key} at least {minimum}, got {mapping[key]}")
    return mapping


def env_json(name: str, default):
    """A JSON value, or `default` when the variable is unset or empty."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be JSON ({exc}), got {raw!r}") from None


def env_url(name: str, schemes: tuple[str, ...]) -> str:
    """A URL whose scheme is one of `schemes`, or "" when the variable is unset."""
    raw = env_str(name)
    if not raw:
        return ""
    parsed = urlparse(raw)
    if parsed.scheme not in schemes:
        raise ImproperlyConfigured(f"{name} must be a URL starting with {' or '.join(s + '://' for s in schemes)}, got {raw!r}")
    if not parsed.hostname and "host=" not in (parsed.query or "") and parsed.scheme not in ("unix", "redis+socket"):
        raise ImproperlyConfigured(f"{name} must name a host, got {raw!r}")
    return raw


def database_from_url(url: str) -> dict:
    """Django DATABASES entry for a postgres:// URL (host may also come as ?host=/socket/dir)."""
    parsed = urlparse(url)
    query = dict(part.split("=", 1) for part in parsed.query.split("&") if "=" in part)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": (parsed.path or "/").lstrip("/") or "postgres",
        "USER": parsed.username or "",
        "PASSWORD": parsed.password or "",
        "HOST": parsed.hostname or query.pop("host", ""),
        "PORT": str(parsed.port or ""),
        "OPTIONS": query,
    }


def secret_from_file(name: str, path, generate) -> str:
    """The variable's value, or one generated once into `path` and read back on every later start."""
    value = env_str(name)
    if value:
        return value
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = generate()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process generated it first: use theirs
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
    return value
