"""The platform's admin: workspaces, memberships, API keys; the LLM registry and traces register
theirs from their own modules (imported here so that admin autodiscovery finds them). The base
admins every app's workspace-scoped models use live in `fathom.admin_scoping`."""

from django.contrib import admin, messages

from fathom.llm import admin as _llm_admin  # noqa: F401 (registers the LLM registry's admins)
from fathom.models import ApiKey, Membership, Workspace
from fathom.services import apikey_create, apikey_revoke, workspace_created
from fathom.tracing import admin as _tracing_admin  # noqa: F401 (registers the traces' admins)


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
