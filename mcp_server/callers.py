"""Who calls: an API key of one workspace, with its role, the same keys as REST's, and the same
principal (fathom.auth.KeyPrincipal: the key's workspace, role and actor).

Over HTTP the SDK's bearer middleware asks `KeyVerifier` for each request's key and keeps the
answer (a `KeyAccessToken`) in its auth context; over stdio the command authenticates its key once
and runs the whole server `acting_as` it. Either way a tool reads the caller with `current_caller()`."""

from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.auth.middleware.auth_context import auth_context_var, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from pydantic import ConfigDict

from fathom.auth import KeyPrincipal
from fathom.services import apikey_authenticate
from fathom.threads import in_thread


class KeyAccessToken(AccessToken):
    """The SDK's access token of a Fathom API key: `client_id` names the key (an MCP session opened
    with one key answers no other), `caller` is what the tools act as."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    caller: KeyPrincipal


def caller_authenticate(secret: str) -> KeyPrincipal | None:
    """The caller an API key's secret stands for, or None when it is unknown or revoked."""
    key = apikey_authenticate(secret=secret) if secret else None
    return KeyPrincipal(key) if key is not None else None


def access_token(caller: KeyPrincipal, secret: str) -> KeyAccessToken:
    return KeyAccessToken(token=secret, client_id=caller.actor_id, scopes=[caller.role], caller=caller)


class KeyVerifier:
    """The SDK's TokenVerifier over Fathom's API keys (one database read, on a thread)."""

    async def verify_token(self, token: str) -> KeyAccessToken | None:
        caller = await in_thread(caller_authenticate)(token)
        return access_token(caller, token) if caller is not None else None


@contextmanager
def acting_as(caller: KeyPrincipal, secret: str) -> Iterator[None]:
    """Run what is inside as `caller` (stdio: the whole server is one key's)."""
    reset = auth_context_var.set(AuthenticatedUser(access_token(caller, secret)))
    try:
        yield
    finally:
        auth_context_var.reset(reset)


def current_caller() -> KeyPrincipal:
    """The caller of the MCP request being served; LookupError outside one (a server run without keys)."""
    token = get_access_token()
    if not isinstance(token, KeyAccessToken):
        raise LookupError("no API key authenticates this MCP request")
    return token.caller

