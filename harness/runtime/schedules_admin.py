"""Admin of sessions' heartbeat and cron schedules: added, listed and deleted with their beat
entries through the same services as REST; beat's own admin pauses or edits an entry."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import format_html

from fathom.admin_scoping import WorkspaceScopedAdmin
from fathom.auth import workspaces_operated_by
from fathom.errors import ApplicationError
from harness.runtime import schedules
from harness.runtime.models import Session, SessionSchedule

EDITABLE = ["session", "kind", "every_seconds", "cron", "timezone", "content"]


class ScheduleAddForm(forms.ModelForm):
    class Meta:
        model = SessionSchedule
        fields = EDITABLE

    def clean(self):
        cleaned = super().clean()
        try:
            schedules.session_schedule_validate(kind=cleaned.get("kind") or "", every_seconds=cleaned.get(
                "every_seconds"), cron=cleaned.get("cron") or "", timezone_name=cleaned.get("timezone") or "UTC")
        except ApplicationError as exc:
            raise ValidationError(exc.message) from None
        session = cleaned.get("session")
        if cleaned.get("kind") == SessionSchedule.Kind.HEARTBEAT and session is not None and \
                session.schedules.filter(kind=SessionSchedule.Kind.HEARTBEAT).exists():
            raise ValidationError("the session has a heartbeat already: delete it to set another interval")
        return cleaned


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

    def get_fields(self, request, obj=None):
        return EDITABLE if obj is None else self.fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = ScheduleAddForm
        return super().get_form(request, obj, change, **kwargs)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "session":
            kwargs["queryset"] = Session.objects.filter(workspace__in=workspaces_operated_by(request.user),
                                                        status=Session.Status.OPEN)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_form(self, request, form, change):
        """A new schedule is made by the service (with its beat entry); the admin logs and shows that row."""
        if change:
            return super().save_form(request, form, change)
        form.save(commit=False)  # readies the form's save_m2m, which the admin calls next (there is no m2m)
        data = form.cleaned_data
        return schedules.session_schedule_create(
            session=data["session"], kind=data["kind"], every_seconds=data.get("every_seconds"),
            cron=data.get("cron") or "", timezone_name=data.get("timezone") or "UTC", content=data.get("content") or "")

    def save_model(self, request, obj, form, change):
        pass  # added in save_form; a schedule is not edited here: its beat entry is (interval, crontab, enabled)

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

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
