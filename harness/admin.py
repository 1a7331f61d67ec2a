from django.contrib import admin

from harness.runtime.models import (
    AgentProfile,
    HarnessSettings,
    Session,
    SessionEvent,
    Trigger,
    Turn,
    UserProfile,
)


@admin.register(AgentProfile)
class AgentProfileAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "workspace", "version", "updated_at"]
    list_filter = ["workspace"]
    search_fields = ["slug", "name"]
    readonly_fields = ["version", "created_at", "updated_at"]


@admin.register(UserProfile)
class UserProfileAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "workspace", "version", "updated_at"]
    list_filter = ["workspace"]
    search_fields = ["slug", "name"]
    readonly_fields = ["version", "created_at", "updated_at"]


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
class SessionAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "tag", "workspace", "status", "turn_count", "runner", "created_at"]
    list_filter = ["status", "workspace"]
    search_fields = ["id", "tag", "title"]
    readonly_fields = ["id", "agent_profile_copy", "user_profile_copy", "profiles_copied_at", "last_event_seq",
                       "turn_count", "runner", "runner_heartbeat_at", "created_at", "updated_at"]
    inlines = [TurnInline, TriggerInline]


@admin.register(SessionEvent)
class SessionEventAdmin(admin.ModelAdmin):
    list_display = ["session", "seq", "kind", "turn", "created_at"]
    list_filter = ["kind"]
    search_fields = ["session__id"]
    readonly_fields = ["workspace", "session", "seq", "kind", "turn", "data", "created_at"]

    def has_add_permission(self, request):
        return False


@admin.register(HarnessSettings)
class HarnessSettingsAdmin(admin.ModelAdmin):
    list_display = ["workspace", "max_turns_per_fire", "sit_round_cap", "refire_cap", "stale_after_seconds"]
