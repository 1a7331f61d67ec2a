"""What a second host must share with this one, as `fathom status` prints it: the database, Redis,
the secret key, the encryption key and the file root (docs/operations.md, Scaling out). Secrets are
never printed, only where they come from."""

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import DatabaseError

from fathom.file_root import MARK_FILE, FileRootMark


def second_host_needs() -> list[str]:
    """One line per setting every host must share: its value here (passwords and keys left out)
    and what a second host must do about it."""
    lines = ["a second host needs the same (set on every host; docs/operations.md, Scaling out):"]
    if settings.EMBEDDED_POSTGRES:
        lines.append("  DATABASE_URL: unset here (the embedded PostgreSQL listens on a local socket only): run "
                     "PostgreSQL 16+ with pgvector and set DATABASE_URL on every host")
    else:
        lines.append(f"  DATABASE_URL: {_without_password(settings.DATABASE_URL)}")
    if settings.EMBEDDED_REDIS:
        lines.append("  REDIS_URL: unset here (the embedded Redis listens on a local socket only): run Redis and "
                     "set REDIS_URL on every host")
    else:
        lines.append(f"  REDIS_URL: {_without_password(settings.REDIS_URL)}")
    lines.append(_secret_line("SECRET_KEY", settings.SECRET_KEY, settings.DATA_DIR / "secret_key"))
    lines.append(_secret_line("FATHOM_ENCRYPTION_KEY", settings.FATHOM_ENCRYPTION_KEY,
                              settings.DATA_DIR / "encryption_key"))
    root = Path(settings.FATHOM_FS_ROOT)
    try:
        mark = FileRootMark.objects.filter(name="shared").first()
    except DatabaseError:
        marked = "its mark unknown: the database is not running"
    else:
        marked = (f"marked {mark.token[:8]}..., first used at {mark.path} on {mark.host}" if mark
                  else "not used yet")
    lines.append(f"  FATHOM_FS_ROOT: {root} ({marked}): mount the same shared folder on every host that runs "
                 f"workers and set FATHOM_FS_ROOT to it there (its {MARK_FILE} must match, or file tasks are "
                 "refused)")
    return lines


def _secret_line(name: str, value: str, path: Path) -> str:
    if path.is_file() and path.read_text().strip() == value:
        return f"  {name}: generated into {path}: copy that file's content into {name} on every host"
    return f"  {name}: from the environment: set the same value on every host"


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
