"""Which upstream answers a model name a client sends to the proxy, first match wins:

1. the workspace's `ProxyRoute` of that name (admin's table), with or without Ollama's `:latest`;
2. a registry model the workspace may use, by its name (its own or one shared with it; `offline`
   always exists), or `provider:model` (called without the deployment's key);
3. the Ollama at OLLAMA_HOST, under the name as given (it answers its own 404 for a name it lacks);
4. with no OLLAMA_HOST: None, which the proxy answers as Ollama does (404, "try pulling it first").

Resolutions are cached per process and dropped when a route or the registry changes (version keys in
Redis, fathom.channels), so the hot path costs no round trip."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from fathom.channels import VersionedCache, version, version_bump
from fathom.llm import registry
from fathom.llm.errors import LLMNotConfigured
from fathom.llm.models import Provider
from festinger.proxy.models import ProxyRoute

ROUTES_VERSION_KEY = "festinger:proxy:routes:version"
OLLAMA = "ollama"
REGISTRY = "registry"


@dataclass(frozen=True)
class Upstream:
    """Who answers: `kind` is "ollama" (`target` is the Ollama model's name) or "registry" (`model`)."""

    name: str
    kind: str
    target: str
    model: registry.ResolvedModel | None = None

    @property
    def family(self) -> str:
        return self.model.provider if self.model is not None else OLLAMA


def upstream_for(*, workspace_id: int, name: str) -> Upstream | None:
    """The upstream that answers `name` in the workspace, or None (an unknown model)."""
    return _upstreams.get((workspace_id, name), lambda: _resolve(workspace_id, name))


def upstream_held(*, workspace_id: int, name: str) -> tuple[bool, Upstream | None]:
    """(True, what `upstream_for` answers) when this process holds it, current; (False, None) when it
    must be resolved from the database."""
    return _upstreams.held((workspace_id, name))


def registry_names(*, workspace_id: int) -> list[tuple[str, str]]:
    """(name, family) of every model the proxy serves without Ollama: the workspace's routes to
    registry models, the registry models it may use and the offline model."""
    names = {registry.OFFLINE_NAME: Provider.OFFLINE.value}
    for row in registry.models_usable_by(workspace=workspace_id).order_by("name").values("name", "provider"):
        names.setdefault(row["name"], row["provider"])
    for route in ProxyRoute.objects.filter(workspace_id=workspace_id, enabled=True).order_by("name"):
        names[route.name] = OLLAMA if route.upstream == ProxyRoute.Upstream.OLLAMA else "registry"
    return sorted(names.items())


@transaction.atomic
def proxy_route_save(*, workspace, name: str, upstream: str, target: str, enabled: bool = True) -> ProxyRoute:
    """Create or change the route of `name` in the workspace; every proxy process uses it at once."""
    route, _ = ProxyRoute.objects.get_or_create(workspace=workspace, name=name,
                                                defaults={"upstream": upstream, "target": target})
    route.upstream, route.target, route.enabled = upstream, target, enabled
    route.full_clean()
    route.save()
    routes_changed()
    return route


def routes_changed() -> None:
    transaction.on_commit(lambda: version_bump(ROUTES_VERSION_KEY))


# --- internals ------------------------------------------------------------------------------------------

_upstreams = VersionedCache(lambda: (version(ROUTES_VERSION_KEY), version(registry.VERSION_KEY), settings.OLLAMA_HOST))


def _resolve(workspace_id: int, name: str) -> Upstream | None:
    bare = name[: -len(":latest")] if name.endswith(":latest") else name
    route = ProxyRoute.objects.filter(workspace_id=workspace_id, name__in={name, bare}, enabled=True).first()
    if route is not None:
        if route.upstream == ProxyRoute.Upstream.OLLAMA:
            return Upstream(name, OLLAMA, route.target) if registry.ollama_base() else None
        model = _registry_model(workspace_id, route.target)
        return Upstream(name, REGISTRY, route.target, model) if model is not None else None
    model = _registry_model(workspace_id, bare)
    if model is not None:
        return Upstream(name, REGISTRY, bare, model)
    if registry.ollama_base():
        return Upstream(name, OLLAMA, name)
    return None


def _registry_model(workspace_id: int, name: str) -> registry.ResolvedModel | None:
    try:
        if ":" in name and name.split(":", 1)[0] in Provider.values:
            return registry.from_spec(name, with_deployment_key=False)
        return registry.model_by_name(name, workspace=workspace_id)
    except LLMNotConfigured:
        return None
