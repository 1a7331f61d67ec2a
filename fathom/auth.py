"""Who may do what, in one place: bearer API keys for the REST API (every authenticated request
carries the key's workspace and role; views read `request.workspace` and never see another
workspace's rows), the owner-or-operator check of the admin, and the one spelling of the operator
who made a decision."""

from dataclasses import dataclass

from rest_framework import authentication, exceptions, permissions

from fathom.models import ROLE_RANK, ApiKey, Role, Workspace
from fathom.services import apikey_authenticate


def role_allows(role: str, needed: str) -> bool:
    """A role may do everything a lower-ranked one may."""
    return ROLE_RANK[Role(role)] >= ROLE_RANK[Role(needed)]


# The roles that act in a workspace (decide proposals, resolve conflicts, change settings), as
# opposed to only reading it: operator and everything ranked above.
OPERATING_ROLES = tuple(role for role in Role if role_allows(role, Role.OPERATOR))


def workspaces_operated_by(user):
    """The workspaces where this (Django admin) user may act: all of them for a superuser, else the
    ones where their membership is owner or operator."""
    if user.is_superuser:
        return Workspace.objects.all()
    return Workspace.objects.filter(memberships__user=user, memberships__role__in=OPERATING_ROLES)


def may_operate(user, *, workspace_id: int) -> bool:
    """The owner-or-operator check of the admin: may this user act in this workspace?"""
    return user.is_superuser or workspaces_operated_by(user).filter(pk=workspace_id).exists()


def operator_actor(*, kind: str, name: str) -> str:
    """Who decided, as stored in `decided_by`, `actor`, `resolved_by` and `trigger`:
    `operator:<kind>:<name>`, the kind being `apikey` (name: the key's prefix), `user` (a Django
    user's username) or `login` (the shell login running a command). Rows written before this
    format hold `operator:<username>` (admin, CLI), which reads as the same thing: nothing parses
    the string, it is shown as written."""
    return f"operator:{kind}:{name}"


def request_actor(request) -> str:
    """The operator behind a request: its API key, or the admin's Django user."""
    if isinstance(request.user, KeyPrincipal):
        return operator_actor(kind="apikey", name=request.user.key.prefix)
    return operator_actor(kind="user", name=request.user.get_username())


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
        return role_allows(principal.role, role_needed(view, request.method))


def role_needed(view, method: str) -> str:
    """The role a call of `view` with this HTTP method needs (REST's rule, which the MCP tools that wrap
    the view follow too): any role reads, unless `view.read_role` raises the bar; writes need
    `view.write_role`, operator by default."""
    if method in permissions.SAFE_METHODS:
        return getattr(view, "read_role", Role.VIEWER)
    return getattr(view, "write_role", Role.OPERATOR)
