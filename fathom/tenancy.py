"""The tenant boundary: workspaces, who belongs to them, and the API keys that act in them. Its own
module so that the platform's other tables (llm, tracing) build on it without importing
`fathom.models`, which gathers them all."""

from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    OPERATOR = "operator", "Operator"
    VIEWER = "viewer", "Viewer"


# Roles ranked by what they may do: a role may do everything a lower one may.
ROLE_RANK = {Role.VIEWER: 0, Role.OPERATOR: 1, Role.OWNER: 2}


class Workspace(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self):
        return self.slug


class WorkspaceScoped(models.Model):
    """Base of every row that belongs to a workspace: each app's tables inherit it."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        abstract = True


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "workspace"], name="membership_unique_user_workspace")]

    def __str__(self):
        return f"{self.user} in {self.workspace} ({self.role})"


class ApiKey(WorkspaceScoped):
    """A bearer secret acting with `role` in its workspace. Only a hash of the secret is stored;
    `prefix` is the visible part that identifies the key in lists and logs."""

    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    hashed_secret = models.CharField(max_length=64)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.OPERATOR)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self):
        return f"{self.prefix}… ({self.role} in {self.workspace_id})"
