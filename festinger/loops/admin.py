"""Admin for the loop detector: its thresholds per workspace (saved through the service, so every
process uses them at once) and its record, read-only."""

from django.contrib import admin

from fathom.admin_scoping import ReadOnlyAdmin, WorkspaceScopedAdmin
from festinger.loops.guard import config_changed
from festinger.loops.models import LoopConfig, LoopEvent


@admin.register(LoopConfig)
class LoopConfigAdmin(WorkspaceScopedAdmin):
    list_display = ["workspace", "enabled", "repeat_count", "cycle_repeats", "stream_repeats", "breaker_after",
                    "breaker_cooldown_seconds", "updated_at"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        config_changed()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        config_changed()


@admin.register(LoopEvent)
class LoopEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "workspace", "session", "kind", "level", "model"]
    list_filter = ["kind", "workspace"]
    search_fields = ["session", "model"]
