"""Admin of sessions' heartbeat and cron schedules: listed with their beat entries, deleted with
them (REST creates them: `POST /v1/sessions/{id}/schedules`); beat's own admin pauses or edits an entry."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from fathom.admin import WorkspaceScopedAdmin
from harness.runtime import schedules
from harness.runtime.models import SessionSchedule


@admin.register(SessionSchedule)
class SessionScheduleAdmin(WorkspaceScopedAdmin):
    list_display = ["id", "session", "kind", "every_seconds", "cron", "timezone", "enabled", "last_fired_at",
                    "workspace"]
    list_filter = ["kind", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["session__id", "session__title", "cron"]
    fields = ["workspace", "session", "kind", "every_seconds", "cron", "timezone", "content", "periodic_task_link",
              "last_fired_at", "created_at"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("session", "periodic_task", "workspace")

    def has_add_permission(self, request):
        return False

    def delete_model(self, request, obj):
        schedules.session_schedule_delete(schedule=obj)

    def delete_queryset(self, request, queryset):
        for schedule in queryset:
            schedules.session_schedule_delete(schedule=schedule)

    @admin.display(boolean=True)
    def enabled(self, schedule):
        return bool(schedule.periodic_task and schedule.periodic_task.enabled)

    @admin.display(description="periodic task")
    def periodic_task_link(self, schedule):
        if schedule.periodic_task_id is None:
            return "—"
        url = reverse("admin:django_celery_beat_periodictask_change", args=[schedule.periodic_task_id])
        return format_html('<a href="{}">{}</a>', url, schedule.periodic_task.name)
