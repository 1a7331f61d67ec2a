"""Autonomy in the admin: the switch, its limits and the signal weights per workspace; the decisions
and pressure samples to read."""

from django import forms
from django.contrib import admin

from fathom.admin_scoping import ReadOnlyAdmin, WorkspaceScopedAdmin
from fathom.errors import ApplicationError
from harness.autonomy.models import AutonomyDecision, AutonomySettings, InboxMark, PressureSample
from harness.autonomy.pressure import SIGNALS
from harness.autonomy.producers import admin as producers_admin  # noqa: F401 - registers the producers' admin
from harness.autonomy.schedules import scheduled_sit_ensure
from harness.autonomy.services import SETTINGS_FIELDS, autonomy_settings_validate


class AutonomySettingsForm(forms.ModelForm):
    class Meta:
        model = AutonomySettings
        fields = ["workspace", "mode", "threshold", "session", *SETTINGS_FIELDS[2:]]

    def clean(self):
        cleaned = super().clean()
        for name, value in cleaned.items():
            setattr(self.instance, name, value)
        try:
            autonomy_settings_validate(self.instance)
        except ApplicationError as exc:
            field = (exc.details or {}).get("field")
            raise forms.ValidationError({field: exc.message} if field in self.fields else exc.message) from None
        cleaned["cron"] = self.instance.cron
        return cleaned


@admin.register(AutonomySettings)
class AutonomySettingsAdmin(WorkspaceScopedAdmin):
    form = AutonomySettingsForm
    list_display = ["workspace", "mode", "threshold", "time_zone", "quiet_start", "quiet_end", "daily_sit_cap",
                    "daily_token_cap", "cron"]
    list_filter = ["mode"]
    readonly_fields = ["updated_at"]
    fieldsets = [
        (None, {"fields": ["workspace", "mode", "threshold", "session"]}),
        ("Limits", {"fields": ["time_zone", "quiet_start", "quiet_end", "idle_minutes", "window_minutes",
                               "daily_sit_cap", "daily_token_cap", "sit_rounds", "series_hours", "cron"]}),
        ("Signal weights", {"fields": [f"weight_{s.name}" for s in SIGNALS],
                            "description": "<br>".join(f"<b>{s.name}</b>: {s.meaning} (full at {s.saturation:g})"
                                                       for s in SIGNALS)}),
    ]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        scheduled_sit_ensure(settings=obj, workspace=obj.workspace)


@admin.register(AutonomyDecision)
class AutonomyDecisionAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "workspace", "mode", "action", "reason", "sit_state", "pressure", "focus_source",
                    "trigger"]
    list_filter = ["action", "reason", "sit_state", "mode", "workspace"]
    search_fields = ["detail", "focus"]


@admin.register(PressureSample)
class PressureSampleAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "workspace", "value"]
    list_filter = ["workspace"]


@admin.register(InboxMark)
class InboxMarkAdmin(ReadOnlyAdmin):
    list_display = ["delta_id", "workspace", "state", "actor", "trigger", "updated_at"]
    list_filter = ["state", "workspace"]
