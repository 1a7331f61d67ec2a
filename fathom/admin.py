from django.contrib import admin, messages

from fathom.auth import workspaces_operated_by
from fathom.models import ApiKey, Membership, Workspace
from fathom.services import apikey_create, apikey_revoke, workspace_created


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


class WorkspaceScopedAdmin(admin.ModelAdmin):
    """The admin of a workspace-scoped model: staff see the rows of their own workspaces, and may put
    new rows only in workspaces where they are owner or operator."""

    def get_queryset(self, request):
        return rows_visible_to(request, super().get_queryset(request))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "workspace" and not request.user.is_superuser:
            kwargs["queryset"] = workspaces_operated_by(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ReadOnlyAdmin(WorkspaceScopedAdmin):
    """Rows written by the code (records, traces, media): shown, never added or edited here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change:  # a workspace added here is set up like one the CLI creates
            workspace_created(workspace=obj)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "workspace", "role", "created_at"]
    list_filter = ["role", ("workspace", admin.RelatedOnlyFieldListFilter)]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are issued with a one-time secret shown in a message; the stored hash is never shown."""

    list_display = ["prefix", "name", "workspace", "role", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["role", ("workspace", admin.RelatedOnlyFieldListFilter), ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name"]
    fields = ["workspace", "name", "role", "prefix", "created_by", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "created_by", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields + (["workspace", "role"] if obj else [])

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["name"])
            return
        issued = apikey_create(workspace=obj.workspace, role=obj.role, name=obj.name, created_by=request.user)
        obj.pk, obj.prefix = issued.key.pk, issued.key.prefix
        self.message_user(request, f"API key created. Copy it now, it is not shown again: {issued.secret}",
                          messages.WARNING)

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        for key in queryset:
            apikey_revoke(key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")

# The platform's other admins live with their code.
from fathom.llm import admin as _llm_admin  # noqa: E402,F401
from fathom.tracing import admin as _tracing_admin  # noqa: E402,F401
