"""Bearer API keys for the REST API. Every authenticated request carries the key's workspace and
role; views read `request.workspace` and never see another workspace's rows."""

from dataclasses import dataclass

from rest_framework import authentication, exceptions, permissions

from fathom.models import ROLE_RANK, ApiKey, Role, Workspace
from fathom.services import apikey_authenticate


@dataclass(frozen=True)
class KeyPrincipal:
    """The `request.user` of a key-authenticated request."""

    key: ApiKey

    is_authenticated = True
    is_anonymous = False

    @property
    def workspace(self) -> Workspace:
        return self.key.workspace

    @property
    def role(self) -> str:
        return self.key.role

    @property
    def actor_id(self) -> str:
        return f"apikey:{self.key.prefix}"

    def __str__(self):
        return self.actor_id


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != self.keyword.lower() or not secret.strip() or " " in secret.strip():
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <api key>'")
        key = apikey_authenticate(secret=secret.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("invalid or revoked API key")
        request.workspace = key.workspace
        return KeyPrincipal(key), key

    def authenticate_header(self, request):
        return self.keyword


class HasWorkspaceRole(permissions.BasePermission):
    """Reads need any role in the workspace; writes need `view.write_role` (operator by default).
    A view may raise the bar for reads too with `view.read_role`."""

    message = "your role in this workspace does not allow this"

    def has_permission(self, request, view):
        principal = request.user
        if not getattr(principal, "is_authenticated", False) or not isinstance(principal, KeyPrincipal):
            raise exceptions.NotAuthenticated("send 'Authorization: Bearer <api key>'")
        if request.method in permissions.SAFE_METHODS:
            needed = getattr(view, "read_role", Role.VIEWER)
        else:
            needed = getattr(view, "write_role", Role.OPERATOR)
        return ROLE_RANK[Role(principal.role)] >= ROLE_RANK[Role(needed)]
