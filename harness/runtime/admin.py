"""Admin of the runtime: profiles (with their history), sessions with their turns, triggers and background
tasks, session events and schedules, the harness settings."""

from django.contrib import admin, messages

from fathom.admin_scoping import ReadOnlyAdmin, WorkspaceScopedAdmin
from fathom.auth import may_operate, operator_actor
from harness.runtime import schedules_admin  # noqa: F401 - registers the schedules' admin
from harness.runtime.background import task_cancel
from harness.runtime.models import (
    AgentProfile,
    HarnessSettings,
    ProfileFieldVersion,
    Session,
    SessionEvent,
    Task,
    Trigger,
    Turn,
    UserProfile,
)
from harness.runtime.profiles import AGENT_FIELDS, USER_FIELDS, profile_update
from harness.runtime.schedules import session_delete


class TaskInline(admin.TabularInline):
    """A session's background tasks, on its admin page."""

    model = Task
    extra = 0
    can_delete = False
    fields = ["created_at", "tool", "state", "attempts", "error", "finished_at"]
    readonly_fields = fields
    show_change_link = True


def profile_save(request, profile, form, change) -> None:
    """An admin edit of a profile goes through profile_update, as every other write does: the
    version is bumped and the values it replaces are kept (profile history)."""
    content = AGENT_FIELDS if isinstance(profile, AgentProfile) else USER_FIELDS
    fields = [name for name in form.changed_data if name in content]
    if not change or not fields:
        profile.save()
        return
    others = {name: form.cleaned_data[name] for name in form.changed_data if name not in content}
    if others:  # the slug or the workspace: not content, no history
        type(profile).objects.filter(pk=profile.pk).update(**others)
    stored = type(profile).objects.get(pk=profile.pk)
    profile_update(profile=stored, replaced_by=operator_actor(kind="user", name=request.user.get_username()),
                   **{name: form.cleaned_data[name] for name in fields})
    profile.version = stored.version


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    """Background tasks: state, attempts, result or error; Pending and Running ones can be canceled."""

    list_display = ["id", "tool", "state", "session", "workspace", "attempts", "created_at", "started_at",
                    "finished_at"]
    list_filter = ["state", "tool", "workspace"]
    search_fields = ["id", "session__id", "call_id"]
    readonly_fields = [f.name for f in Task._meta.fields]
    actions = ["cancel"]

    @admin.action(description="Cancel the selected tasks")
    def cancel(self, request, queryset):
        canceled = 0
        for task in queryset:
            if not may_operate(request.user, workspace_id=task.workspace_id):
                continue
            canceled += task_cancel(task=task, by=operator_actor(kind="user", name=request.user.get_username())
                                    ).state == Task.State.CANCELED
        self.message_user(request, f"{canceled} task(s) canceled", messages.SUCCESS)


@admin.register(ProfileFieldVersion)
class ProfileFieldVersionAdmin(ReadOnlyAdmin):
    """Each value a profile field had before a write (a managed file write, a profile edit) replaced it."""

    list_display = ["field", "version", "agent_profile", "user_profile", "workspace", "replaced_by", "created_at"]
    list_filter = ["field", "workspace"]
    search_fields = ["agent_profile__slug", "user_profile__slug", "content"]
    readonly_fields = [f.name for f in ProfileFieldVersion._meta.fields]


@admin.register(AgentProfile)
class AgentProfileAdmin(WorkspaceScopedAdmin):
    list_display = ["slug", "name", "workspace", "version", "updated_at"]
    list_filter = ["workspace"]
    search_fields = ["slug", "name"]
    readonly_fields = ["version", "created_at", "updated_at"]

    def save_model(self, request, obj, form, change):
        profile_save(request, obj, form, change)


@admin.register(UserProfile)
class UserProfileAdmin(WorkspaceScopedAdmin):
    list_display = ["slug", "name", "workspace", "version", "updated_at"]
    list_filter = ["workspace"]
    search_fields = ["slug", "name"]
    readonly_fields = ["version", "created_at", "updated_at"]

    def save_model(self, request, obj, form, change):
        profile_save(request, obj, form, change)


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
    inlines = [TurnInline, TriggerInline, TaskInline]

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
