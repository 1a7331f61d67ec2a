"""Admin of the fires: each with its journal, cancellable."""

from django.contrib import admin

from fathom.admin_scoping import WorkspaceScopedAdmin
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.fires.services import fire_cancel


class FireToolCallInline(admin.TabularInline):
    model = FireToolCall
    extra = 0
    can_delete = False
    fields = ["turn", "position", "name", "plan_step", "ok", "arguments", "result", "latency_ms"]
    readonly_fields = fields


class FireTurnInline(admin.TabularInline):
    model = FireTurn
    extra = 0
    can_delete = False
    fields = ["number", "phase", "text", "tool_calls", "forced", "model", "input_tokens", "output_tokens", "cost",
              "latency_ms"]
    readonly_fields = fields


@admin.register(Fire)
class FireAdmin(WorkspaceScopedAdmin):
    """Fires with their journal: every model turn and every tool call with its whole result."""

    list_display = ["id", "mode", "status", "stop_reason", "verdict", "session", "depth", "model_calls", "cost",
                    "created_at"]
    list_filter = ["mode", "status", "stop_reason", "verdict", "workspace"]
    search_fields = ["id", "question", "trace_id"]
    readonly_fields = [f.name for f in Fire._meta.fields]
    inlines = [FireTurnInline, FireToolCallInline]
    actions = ["cancel"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Cancel the selected fires")
    def cancel(self, request, queryset):
        for fire in queryset:
            fire_cancel(fire=fire)
