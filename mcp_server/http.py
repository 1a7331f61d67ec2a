"""The MCP server on the main port (settings.FATHOM_ASGI_MOUNTS: `/mcp`), over streamable HTTP.

Each request carries an API key as a Bearer token (the SDK's bearer middleware asks
mcp_server.callers.KeyVerifier); without a valid one it is answered 401 in the API's error envelope,
as REST answers it, and its Host is checked against ALLOWED_HOSTS as Django checks it. Clients of the
2026-07-28 protocol make self-contained requests (any web process answers them; closing the response
cancels the call); older clients open a session, which lives in the process that opened it and
answers only the key that opened it."""

import json
from contextlib import AsyncExitStack

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.transport_security import TransportSecuritySettings
from starlette.middleware.authentication import AuthenticationMiddleware

from fathom.api.errors import error_body
from mcp_server.callers import KeyVerifier
from mcp_server.server import fathom_server

MOUNT_PATH = "/mcp"


class McpHttpApp:
    """The ASGI app under MOUNT_PATH. Its session manager runs from the server's lifespan startup
    (`startup`) to its shutdown (`close`), both called by fathom.asgi; a server started again in the
    same process (tests do) gets a new one."""

    def __init__(self):
        self.server = fathom_server()
        self.app = None
        self.running = AsyncExitStack()

    async def startup(self) -> None:
        # Host and Origin are Django's business here (ALLOWED_HOSTS, checked below): the SDK's own check
        # knows only loopback names.
        routes = self.server.streamable_http_app(
            streamable_http_path=MOUNT_PATH,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        await self.running.enter_async_context(self.server.session_manager.run())
        self.app = AuthenticationMiddleware(KeyRequired(AuthContextMiddleware(routes)),
                                            backend=BearerAuthBackend(KeyVerifier()))

    async def close(self) -> None:
        self.app = None
        await self.running.aclose()

    async def __call__(self, scope, receive, send):
        host = dict(scope.get("headers", ())).get(b"host", b"").decode("latin-1")
        if not validate_host(split_domain_port(host)[0], settings.ALLOWED_HOSTS):
            await respond(send, 400, "bad_request", f"Invalid HTTP_HOST header: {host!r}")
        elif self.app is None:
            await respond(send, 503, "unavailable", "the MCP endpoint runs only under a server that sends the "
                                                    "ASGI lifespan events (uvicorn does)")
        else:
            await self.app(scope, receive, send)


class KeyRequired:
    """Answers a request without a valid API key 401, as REST does; lets the others through."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if isinstance(scope.get("user"), AuthenticatedUser):
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers", ())).get(b"authorization", b"")
        message = ("invalid or revoked API key" if header.lower().startswith(b"bearer ")
                   else "send 'Authorization: Bearer <api key>'")
        await respond(send, 401, "not_authenticated", message, {"www-authenticate": "Bearer"})


async def respond(send, status: int, code: str, message: str, headers: dict | None = None) -> None:
    body = json.dumps(error_body(code, message)).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *((name.encode(), value.encode()) for name, value in (headers or {}).items())]})
    await send({"type": "http.response.body", "body": body})


def main_port_app() -> McpHttpApp:
    return McpHttpApp()
