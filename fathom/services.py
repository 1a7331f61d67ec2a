"""State changes of the platform: workspaces, memberships, API keys, the operator account."""

import hashlib
import secrets
from dataclasses import dataclass

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from fathom.errors import ApplicationError, ConflictError, NotFoundError, PermissionDeniedError
from fathom.models import ApiKey, Membership, Role, Workspace

KEY_PREFIX = "fth_"
DEFAULT_WORKSPACE = "default"


def workspace_create(*, slug: str, name: str = "") -> Workspace:
    """Create a workspace, set up by every app (`workspace_created`); a slug that is taken or not a slug
    is an error."""
    if not slug or slugify(slug) != slug:
        raise ApplicationError(f"{slug!r} is not a valid slug (lowercase letters, digits, hyphens)")
    if Workspace.objects.filter(slug=slug).exists():
        raise ConflictError(f"workspace {slug!r} exists already")
    with transaction.atomic():
        workspace = Workspace.objects.create(slug=slug, name=name or slug)
        workspace_created(workspace=workspace)
    return workspace


def workspace_created(*, workspace: Workspace) -> None:
    """A new workspace is set up by each installed app that keeps state per workspace: every AppConfig
    with a `workspace_created(workspace=)` method is called, in INSTALLED_APPS order, inside the
    caller's transaction (Festinger bootstraps its world model, so it is active from the first call).
    fathom imports none of them: the app registry names them."""
    for app_config in apps.get_app_configs():
        hook = getattr(app_config, "workspace_created", None)
        if hook is not None:
            hook(workspace=workspace)


def workspace_get(*, slug: str) -> Workspace:
    try:
        return Workspace.objects.get(slug=slug)
    except Workspace.DoesNotExist:
        raise NotFoundError(f"no workspace {slug!r}") from None


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    secret: str  # shown once, never stored


def apikey_create(*, workspace: Workspace, role: str, name: str = "", created_by=None) -> IssuedKey:
    """Issue a key; the returned secret is the only time it exists in clear."""
    if role not in Role.values:
        raise ApplicationError(f"role must be one of {', '.join(Role.values)}, got {role!r}")
    prefix = secrets.token_hex(4)
    secret = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    key = ApiKey.objects.create(
        workspace=workspace, name=name, prefix=prefix, hashed_secret=_hash(secret), role=role,
        created_by=created_by,
    )
    return IssuedKey(key=key, secret=secret)


def apikey_revoke(*, key: ApiKey) -> ApiKey:
    """Revoke a key at once; revoking twice keeps the first time."""
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def apikey_authenticate(*, secret: str) -> ApiKey | None:
    """The active key this secret belongs to, or None. Constant-time comparison of hashes."""
    if not secret.startswith(KEY_PREFIX) or secret.count("_") < 2:
        return None
    prefix = secret[len(KEY_PREFIX):].split("_", 1)[0]
    key = ApiKey.objects.select_related("workspace").filter(prefix=prefix, revoked_at=None).first()
    if key is None or not secrets.compare_digest(key.hashed_secret, _hash(secret)):
        return None
    now = timezone.now()
    # Touch last_used_at at most once a minute, so a busy key does not write on every request.
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


@transaction.atomic
def operator_ensure(*, workspace: Workspace, email: str, password: str | None) -> tuple[object, str | None]:
    """The operator account exists and owns `workspace`. Returns (user, generated password or None).
    A password is generated only when the account is created without one given."""
    User = get_user_model()
    user = User.objects.filter(username=email).first()
    generated = None
    if user is None:
        generated = None if password else secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=email, email=email, password=password or generated)
    elif password and not user.check_password(password):
        user.set_password(password)
        user.save(update_fields=["password"])
    Membership.objects.get_or_create(user=user, workspace=workspace, defaults={"role": Role.OWNER})
    return user, generated


@transaction.atomic
def operator_password_set(*, email: str, password: str | None = None) -> str:
    """Set a new password for an existing account (generated when none is given); returns it.
    NotFoundError when no account has that login."""
    user = get_user_model().objects.select_for_update().filter(username=email).first()
    if user is None:
        raise NotFoundError(f"no account {email!r}")
    password = password or secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    return password


@transaction.atomic
def workspace_create_owned(*, user, slug: str, name: str = "") -> Workspace:
    """Create a workspace (as `workspace_create`) that `user` owns: the dashboard's first run. Only a
    user who `may_create_workspaces` may (PermissionDeniedError otherwise)."""
    if not may_create_workspaces(user):
        raise PermissionDeniedError("creating workspaces is a privilege a superuser grants "
                                    "(the fathom.add_workspace permission)")
    workspace = workspace_create(slug=slug, name=name)
    Membership.objects.create(user=user, workspace=workspace, role=Role.OWNER)
    return workspace


def may_create_workspaces(user) -> bool:
    """Superusers, and users a superuser gave the `fathom.add_workspace` permission (admin: Users)."""
    return user.is_active and user.has_perm("fathom.add_workspace")


def workspace_default_ensure() -> Workspace:
    """The `default` workspace, created (and set up, `workspace_created`) when it does not exist."""
    workspace, created = Workspace.objects.get_or_create(slug=DEFAULT_WORKSPACE, defaults={"name": "Default"})
    if created:
        workspace_created(workspace=workspace)
    return workspace


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
