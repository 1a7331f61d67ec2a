"""The base admins of workspace-scoped models, shared by every app's admin: staff see the rows of the
workspaces they belong to."""

from django.contrib import admin

from fathom.auth import workspaces_operated_by
from fathom.models import Workspace


def rows_visible_to(request, queryset):
    """A workspace-scoped queryset as a staff user may see it: superusers everything, others only
    the rows of workspaces they are members of."""
    if request.user.is_superuser:
        return queryset
    return queryset.filter(workspace__in=workspaces_visible_to(request))


def workspaces_visible_to(request):
    if request.user.is_superuser:
        return Workspace.objects.all()
    return Workspace.objects.filter(memberships__user=request.user)


class WorkspaceScoped:
    """A ModelAdmin's or an inline's scoping: staff see the rows of their own workspaces, and may put
    new rows only in workspaces where they are owner or operator."""

    def get_queryset(self, request):
        return rows_visible_to(request, super().get_queryset(request))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "workspace" and not request.user.is_superuser:
            kwargs["queryset"] = workspaces_operated_by(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class WorkspaceScopedAdmin(WorkspaceScoped, admin.ModelAdmin):
    """The admin of a workspace-scoped model (`WorkspaceScoped`)."""


class ReadOnlyAdmin(WorkspaceScopedAdmin):
    """Rows written by the code (records, traces, media): shown, never added or edited here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
