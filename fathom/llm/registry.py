"""Which model answers a role in a workspace.

A workspace reaches only its own models and the deployment-wide ones shared with it
(`models_usable_by`); assignments are checked against the same rule when made (fathom.llm.services).

Lookup order, first match wins: the workspace's row for the role, for its parent role (PARENT_ROLES:
a fire's review pass is answered by the main model, the judge by the classifier, unless given their
own), the workspace's "*" row, then the same three rows of the deployment default, then
FATHOM_DEFAULT_MODEL ("provider:model" from the environment), and finally the offline model.

Resolutions are cached in-process and kept coherent across processes by a version number in Redis
that every registry change bumps (`registry_changed`, fathom.channels), so the hot path costs no round
trip."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.db import transaction
from django.db.models import Q
from django.dispatch import receiver

from fathom.channels import VersionedCache, version, version_bump
from fathom.llm.errors import LLMNotConfigured
from fathom.llm.models import ANY_ROLE, LLMModel, ModelAssignment, OpenAIApi, Provider

VERSION_KEY = "fathom:llm:registry:version"
OLLAMA_PORT = "11434"
LOCAL_HOST = "127.0.0.1"
OLLAMA_DEFAULT = f"http://{LOCAL_HOST}:{OLLAMA_PORT}"
BIND_ALL = ("0.0.0.0", "::")  # how a server is told to listen everywhere; as a host to call, this machine
# The offline model, used when nothing else is configured. Not a row: it always exists.
OFFLINE_NAME = "offline"
# Roles named apart in traces and counts whose model is their parent's unless assigned their own.
PARENT_ROLES = {"review": "main", "judge": "classifier"}


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """Everything a provider needs to make one call. The key lives only in memory (not in repr)."""

    name: str
    provider: str
    model: str
    base_url: str = ""
    api: str = OpenAIApi.CHAT_COMPLETIONS.value
    api_key: str = field(default="", repr=False)
    input_price_per_mtok: float = 0.0
    output_price_per_mtok: float = 0.0
    cached_input_price_per_mtok: float | None = None
    context_window: int = 128_000
    max_output_tokens: int = 4096
    timeout_seconds: float = 60.0
    options: dict[str, Any] = field(default_factory=dict)
    model_id: int | None = None

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """US dollars for these tokens; cached input tokens at the cached price when one is set."""
        cached_price = self.input_price_per_mtok if self.cached_input_price_per_mtok is None \
            else self.cached_input_price_per_mtok
        uncached = max(input_tokens - cached_tokens, 0)
        return (uncached * self.input_price_per_mtok + cached_tokens * cached_price
                + output_tokens * self.output_price_per_mtok) / 1_000_000


OFFLINE_MODEL = ResolvedModel(name=OFFLINE_NAME, provider=Provider.OFFLINE.value, model="offline")


def resolve(*, workspace, role: str) -> ResolvedModel:
    """The model that answers `role` in `workspace` (a Workspace or its id)."""
    workspace_id = getattr(workspace, "pk", workspace)
    return _resolved.get((workspace_id, role), lambda: _resolve_uncached(workspace_id, role))


def model_by_name(name: str, *, workspace) -> ResolvedModel:
    """The model `workspace` (a Workspace or its id) calls `name`: its own, else a deployment-wide one
    shared with it ("offline" always exists). Another workspace's model is no model of that name."""
    if name == OFFLINE_NAME:
        return OFFLINE_MODEL
    row = models_usable_by(workspace=workspace).filter(name=name).order_by("workspace_id").first()
    if row is None:
        raise LLMNotConfigured(f"no model named {name!r} in the registry")
    return from_row(row)


def models_usable_by(*, workspace):
    """The registry rows `workspace` may list, call and assign: its own and those shared with it."""
    workspace_id = getattr(workspace, "pk", workspace)
    return LLMModel.objects.filter(Q(workspace_id=workspace_id) | Q(workspace=None, shared_with=workspace_id)).distinct()


def registry_changed() -> None:
    """Call after any change to LLMModel or ModelAssignment rows: every process re-resolves. Bumps
    the version now (this process sees its uncommitted rows) and again after commit (a process that
    re-resolved in between would otherwise keep the old rows)."""
    _bump()
    transaction.on_commit(_bump)


def _bump() -> None:
    version_bump(VERSION_KEY)


def from_row(row: LLMModel) -> ResolvedModel:
    """The resolved form of a registry row: its own key, or the environment's when a superuser made it
    use the deployment's key; OLLAMA_HOST for an openai-compatible model without a base URL."""
    api_key = row.get_api_key()
    base_url = row.base_url
    if not api_key and row.uses_deployment_key and row.workspace_id is None:
        api_key = deployment_key(row.provider)
    if row.provider == Provider.OPENAI_COMPATIBLE and not base_url:
        base_url = ollama_base_url()
    return ResolvedModel(
        name=row.name, provider=row.provider, model=row.model, base_url=base_url, api=row.api, api_key=api_key,
        input_price_per_mtok=float(row.input_price_per_mtok), output_price_per_mtok=float(row.output_price_per_mtok),
        cached_input_price_per_mtok=(None if row.cached_input_price_per_mtok is None
                                     else float(row.cached_input_price_per_mtok)),
        context_window=row.context_window, max_output_tokens=row.max_output_tokens,
        timeout_seconds=row.timeout_seconds, options=dict(row.options or {}), model_id=row.pk,
    )


def from_spec(spec: str, *, with_deployment_key: bool = True) -> ResolvedModel:
    """A model from "provider:model" (FATHOM_DEFAULT_MODEL, the CLI's --provider/--model): the deployment's
    own choices, so with its key from the environment. A tenant's request naming one (the proxy) passes
    `with_deployment_key=False`: the call goes without a key."""
    provider, _, model = spec.partition(":")
    if provider not in Provider.values:
        raise LLMNotConfigured(f"unknown provider {provider!r} in {spec!r} (one of {', '.join(Provider.values)})")
    if provider == Provider.OFFLINE:
        return OFFLINE_MODEL
    api_key = deployment_key(provider) if with_deployment_key else ""
    base_url = ollama_base_url() if provider == Provider.OPENAI_COMPATIBLE else ""
    return ResolvedModel(name=spec, provider=provider, model=model or provider, base_url=base_url, api_key=api_key)


def deployment_key(provider: str) -> str:
    """The provider's key from the server's environment ("" for providers that take none)."""
    return {Provider.OPENAI: settings.OPENAI_API_KEY, Provider.ANTHROPIC: settings.ANTHROPIC_API_KEY}.get(provider, "")


def ollama_base() -> str:
    """OLLAMA_HOST as the base URL of the Ollama it names, "" when none is configured, read as Ollama
    reads it: without a scheme, http on port 11434 unless a port is named; `http://` or `https://`
    without a port, 80 or 443. A bind-all address (0.0.0.0, [::]: an Ollama server's OLLAMA_HOST, often
    set in the same environment) is this machine. The one reading of OLLAMA_HOST, the registry's and
    Festinger's proxy's."""
    host = settings.OLLAMA_HOST.strip()
    if not host:
        return ""
    schemed = "://" in host
    url = urlsplit(host if schemed else f"http://{host}")
    name = LOCAL_HOST if url.hostname in BIND_ALL or not url.hostname else url.hostname
    if ":" in name:  # an IPv6 address, bracketed again
        name = f"[{name}]"
    try:
        port = url.port or ("" if schemed else OLLAMA_PORT)
    except ValueError as exc:  # a port that is not a number from 0 to 65535
        raise ImproperlyConfigured(f"OLLAMA_HOST={host!r}: {exc}") from exc
    return f"{url.scheme}://{name}{f':{port}' if port else ''}{url.path}".rstrip("/")


def ollama_base_url() -> str:
    """The OpenAI-compatible base URL of the Ollama OLLAMA_HOST names (ollama_base), or of Ollama's
    default address when it names none."""
    return (ollama_base() or OLLAMA_DEFAULT) + "/v1"


def with_options(model: ResolvedModel, **changes) -> ResolvedModel:
    return replace(model, **changes)


# --- internals ------------------------------------------------------------------------------------------

_resolved = VersionedCache(lambda: version(VERSION_KEY))


def _resolve_uncached(workspace_id, role: str) -> ResolvedModel:
    wanted = [role, *([PARENT_ROLES[role]] if role in PARENT_ROLES else []), ANY_ROLE]
    rows = list(
        ModelAssignment.objects.select_related("model")
        .filter(Q(workspace_id=workspace_id) | Q(workspace=None), role__in=wanted)
    )
    # Most specific first: own workspace before the deployment, the named role before its parent before "*".
    rows.sort(key=lambda a: (a.workspace_id is None, wanted.index(a.role)))
    if rows:
        return from_row(rows[0].model)
    if settings.FATHOM_DEFAULT_MODEL:
        return from_spec(settings.FATHOM_DEFAULT_MODEL)
    return OFFLINE_MODEL


@receiver(setting_changed)
def _settings_changed(setting, **_kwargs):
    if setting in ("FATHOM_DEFAULT_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_HOST"):
        _resolved.clear()
