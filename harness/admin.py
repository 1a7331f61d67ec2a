from django.contrib import admin

from fathom.admin_scoping import WorkspaceScopedAdmin
from harness.autonomy import admin as autonomy_admin  # noqa: F401 - registers autonomy's admin
from harness.autonomy.producers import admin as producers_admin  # noqa: F401 - registers the producers' admin
from harness.conductor import admin as conductor_admin  # noqa: F401 - registers the conductor's admin
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.fires.services import fire_cancel
from harness.quality import admin as quality_admin  # noqa: F401 - registers the quality harness's admin
from harness.runtime import admin as runtime_admin  # registers the tasks' and profile history's admin
from harness.runtime import schedules_admin  # noqa: F401 - registers its admin
from harness.runtime.models import (
    AgentProfile,
    HarnessSettings,
    Session,
    SessionEvent,
    Trigger,
    Turn,
    UserProfile,
)
from harness.runtime.schedules import session_delete


@admin.register(AgentProfile)
class AgentProfileAdmin(WorkspaceScopedAdmin):
    list_display = ["slug", "name", "workspace", "version", "updated_at"]
    list_filter = ["workspace"]
    search_fields = ["slug", "name"]
    readonly_fields = ["version", "created_at", "updated_at"]

    def save_model(self, request, obj, form, change):
        runtime_admin.profile_save(request, obj, form, change)


@admin.register(UserProfile)
class UserProfileAdmin(WorkspaceScopedAdmin):
    list_display = ["slug", "name", "workspace", "version", "updated_at"]
    list_filter = ["workspace"]
    search_fields = ["slug", "name"]
    readonly_fields = ["version", "created_at", "updated_at"]

    def save_model(self, request, obj, form, change):
        runtime_admin.profile_save(request, obj, form, change)


class TriggerInline(admin.TabularInline):
    model = Trigger
    extra = 0
    can_delete = False
    fields = ["created_at", "kind", "state", "source", "content", "addressed", "addressed_note", "refires",
              "given_up_at", "turn"]
    readonly_fields = fields
    show_change_link = True


class TurnInline(admin.TabularInline):
    model = Turn
    extra = 0
    can_delete = False
    fields = ["number", "status", "created_at", "ended_at", "runner", "error"]
    readonly_fields = fields


@admin.register(Session)
class SessionAdmin(WorkspaceScopedAdmin):
    list_display = ["id", "title", "tag", "workspace", "status", "turn_count", "runner", "created_at"]
    list_filter = ["status", "workspace"]
    search_fields = ["id", "tag", "title"]
    readonly_fields = ["id", "agent_profile_copy", "user_profile_copy", "profiles_copied_at", "last_event_seq",
                       "turn_count", "runner", "runner_heartbeat_at", "created_at", "updated_at"]
    inlines = [TurnInline, TriggerInline, runtime_admin.TaskInline]

    def delete_model(self, request, obj):
        session_delete(session=obj)  # its schedules' beat entries with it

    def delete_queryset(self, request, queryset):
        for session in queryset:
            session_delete(session=session)


@admin.register(SessionEvent)
class SessionEventAdmin(WorkspaceScopedAdmin):
    list_display = ["session", "seq", "kind", "turn", "created_at"]
    list_filter = ["kind"]
    search_fields = ["session__id"]
    readonly_fields = ["workspace", "session", "seq", "kind", "turn", "data", "created_at"]

    def has_add_permission(self, request):
        return False


@admin.register(HarnessSettings)
class HarnessSettingsAdmin(WorkspaceScopedAdmin):
    list_display = ["workspace", "max_turns_per_fire", "sit_round_cap", "refire_cap", "stale_after_seconds",
                    "stream_batch_ms"]


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

    list_display = ["id", "mode", "status", "stop_reason", "session", "depth", "model_calls", "cost", "created_at"]
    list_filter = ["mode", "status", "stop_reason", "workspace"]
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
