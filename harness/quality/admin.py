"""Admin of the quality harness: runs with their attempts (read only), feedback, each workspace's
settings (swarm, calibration) and retry policy, and the prompt registry (superusers: it is global)."""

from django import forms
from django.contrib import admin

from fathom.admin_scoping import ReadOnlyAdmin, WorkspaceScopedAdmin
from harness.quality.models import (
    Feedback,
    QualityAttempt,
    QualityPrompt,
    QualityRetryPolicy,
    QualityRun,
    QualitySettings,
)
from harness.quality.prompts import DEFAULTS


class QualityAttemptInline(admin.StackedInline):
    model = QualityAttempt
    extra = 0
    can_delete = False
    fields = ["number", "combined", "decision", "contract", "verifier", "perspectives", "stream_alerts",
              "healing_prompt", "response"]
    readonly_fields = fields


@admin.register(QualityRun)
class QualityRunAdmin(ReadOnlyAdmin):
    list_display = ["fire", "workspace", "state", "end_reason", "level", "workflow", "attempt", "verifier_score",
                    "waiting_for", "created_at"]
    list_filter = ["state", "workspace"]
    search_fields = ["fire__id", "fire__question"]
    readonly_fields = [f.name for f in QualityRun._meta.fields]
    inlines = [QualityAttemptInline]

    @admin.display(description="level")
    def level(self, run):
        return run.complexity.get("level", "")

    @admin.display(description="workflow")
    def workflow(self, run):
        return run.complexity.get("workflow_type", "")


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    list_display = ["fire", "workspace", "rating", "verifier_score", "author", "created_at"]
    list_filter = ["rating", "workspace"]
    search_fields = ["fire__id", "comment"]


@admin.register(QualitySettings)
class QualitySettingsAdmin(WorkspaceScopedAdmin):
    list_display = ["workspace", "enabled", "swarm_enabled", "swarm_min_sources", "calibration_built_at"]
    readonly_fields = ["calibration", "calibration_built_at"]


@admin.register(QualityRetryPolicy)
class QualityRetryPolicyAdmin(WorkspaceScopedAdmin):
    list_display = ["workspace", "workflow_type", "max_attempts", "good_enough_score", "low_quality_threshold"]
    list_filter = ["workspace", "workflow_type"]


class QualityPromptForm(forms.ModelForm):
    prompt_id = forms.ChoiceField(choices=[(pid, pid) for pid in DEFAULTS])

    class Meta:
        model = QualityPrompt
        fields = ["prompt_id", "text"]


@admin.register(QualityPrompt)
class QualityPromptAdmin(admin.ModelAdmin):
    """Overrides of the built-in prompts (harness.quality.prompts.DEFAULTS); deleting one restores the
    default. Global to every workspace, so only superusers edit them."""

    form = QualityPromptForm
    list_display = ["prompt_id", "updated_at"]

    def get_changeform_initial_data(self, request):
        prompt_id = request.GET.get("prompt_id", "")
        return {"prompt_id": prompt_id, "text": DEFAULTS.get(prompt_id, "")}

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser
