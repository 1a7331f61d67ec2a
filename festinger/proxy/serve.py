"""The proxy's two doors: its own port (`fathom up` runs `festinger.proxy.asgi`, one workspace per
port, no credentials from loopback, FATHOM_PROXY_TOKEN as a shared Bearer token when set), and the
main port's `/v1/festinger/proxy/...`, where the usual API key names the workspace."""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from fathom.auth import role_allows
from fathom.processes import proxy_bind_refusal
from fathom.services import apikey_authenticate, workspace_default_ensure
from fathom.tenancy import Role, Workspace
from fathom.threads import in_thread
from festinger.proxy.admission import Admission, own_port_hosts
from festinger.proxy.app import ProxyApp
from festinger.proxy.request import bearer_of
from festinger.proxy.wire import WireError

log = logging.getLogger(__name__)

MOUNT_PREFIX = "/v1/festinger/proxy"
# The routes that call a model (and so teach Festinger): a viewer's key reads, it never calls them.
MODEL_CALLING_PATHS = frozenset({"/api/chat", "/api/generate", "/api/embed", "/api/embeddings",
                                 "/v1/chat/completions", "/v1/embeddings"})


def own_port_app(*, workspace_slug: str | None = None, token: str | None = None, bind: str | None = None) -> ProxyApp:
    """The proxy of one workspace (FATHOM_PROXY_WORKSPACE), guarded by FATHOM_PROXY_TOKEN when set, for
    the Host names of its bind (FATHOM_PROXY_HOST). Bound beyond loopback without a token, it refuses
    to start (ImproperlyConfigured, naming FATHOM_PROXY_TOKEN)."""
    slug = workspace_slug or settings.FATHOM_PROXY_WORKSPACE
    token = settings.FATHOM_PROXY_TOKEN if token is None else token
    bind = settings.FATHOM_PROXY_HOST if bind is None else bind
    if not token and (refusal := proxy_bind_refusal(bind)):
        raise ImproperlyConfigured(refusal)
    found: list[int] = []

    def lookup() -> int:
        if slug == "default":
            return workspace_default_ensure().pk
        row = Workspace.objects.filter(slug=slug).first()
        if row is None:
            raise LookupError(f"FATHOM_PROXY_WORKSPACE names no workspace: {slug!r}")
        return row.pk

    async def workspace_of(scope) -> int | None:
        if token and not hmac.compare_digest(bearer_of(scope).encode(), token.encode()):
            return None
        if not found:
            try:
                found.append(await in_thread(lookup)())
            except LookupError as exc:  # a configuration error: said on every request until it is fixed
                raise WireError(503, str(exc)) from None
        return found[0]

    admission = Admission(hosts_setting="FATHOM_PROXY_ALLOWED_HOSTS", hosts=own_port_hosts(bind))
    return ProxyApp(workspace_of=workspace_of, admission=admission)


def main_port_app() -> ProxyApp:
    """The proxy under the main port (settings.FATHOM_ASGI_MOUNTS): the Bearer API key names the
    workspace, and its role must be operator or above on a route that calls a model (403); errors are in
    the API's envelope, Host is checked against ALLOWED_HOSTS as on the rest of the port."""

    def key_of(secret: str):
        return apikey_authenticate(secret=secret) if secret else None

    async def workspace_of(scope) -> int | None:
        key = await in_thread(key_of)(bearer_of(scope))
        if key is None:
            return None
        if scope["path"][len(MOUNT_PREFIX):] in MODEL_CALLING_PATHS and not role_allows(key.role, Role.OPERATOR):
            raise WireError(403, "your role in this workspace does not allow model calls (a viewer key reads)")
        return key.workspace_id

    admission = Admission(hosts_setting="ALLOWED_HOSTS")
    return ProxyApp(workspace_of=workspace_of, admission=admission, prefix=MOUNT_PREFIX, envelope=True, keyed=True,
                    threads=16)

