"""Admin for the model registry. The API key is write-only: the form takes a new key, the pages only
ever show its last four characters."""

from django import forms
from django.contrib import admin

from fathom.llm import ROLES
from fathom.llm.models import LLMModel, ModelAssignment
from fathom.llm.registry import registry_changed


class LLMModelForm(forms.ModelForm):
    api_key = forms.CharField(
        required=False, strip=True, widget=forms.PasswordInput(render_value=False),
        help_text="Leave blank to keep the current key. Stored encrypted; only the last 4 characters are shown.")
    base_url = forms.URLField(required=False, assume_scheme="http", max_length=500,
                              help_text="for openai-compatible servers, e.g. http://localhost:11434/v1")
    clear_api_key = forms.BooleanField(required=False, help_text="Remove the stored key (the provider's "
                                                                 "environment variable is used instead).")

    class Meta:
        model = LLMModel
        fields = ["name", "provider", "model", "api", "base_url", "input_price_per_mtok", "output_price_per_mtok",
                  "cached_input_price_per_mtok", "context_window", "max_output_tokens", "timeout_seconds", "options"]

    def save(self, commit=True):
        row = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            row.set_api_key("")
        elif self.cleaned_data.get("api_key"):
            row.set_api_key(self.cleaned_data["api_key"])
        if commit:
            row.save()
        return row


class AssignmentForm(forms.ModelForm):
    role = forms.CharField(max_length=48, help_text=f"one of {', '.join(ROLES)} (or any lowercase word), or * for every role")

    class Meta:
        model = ModelAssignment
        fields = ["workspace", "role", "model"]


class AssignmentInline(admin.TabularInline):
    model = ModelAssignment
    form = AssignmentForm
    extra = 0
    fields = ["workspace", "role"]


@admin.register(LLMModel)
class LLMModelAdmin(admin.ModelAdmin):
    form = LLMModelForm
    list_display = ["name", "provider", "model", "base_url", "key", "input_price_per_mtok", "output_price_per_mtok",
                    "context_window", "updated_at"]
    list_filter = ["provider"]
    search_fields = ["name", "model"]
    readonly_fields = ["key"]
    inlines = [AssignmentInline]

    @admin.display(description="API key")
    def key(self, obj):
        return obj.api_key_hint or "(environment)"

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        registry_changed()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        registry_changed()


@admin.register(ModelAssignment)
class ModelAssignmentAdmin(admin.ModelAdmin):
    form = AssignmentForm
    list_display = ["role", "model", "scope"]
    list_filter = ["role", ("workspace", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["model", "workspace"]

    @admin.display(description="applies to")
    def scope(self, obj):
        return obj.workspace.slug if obj.workspace_id else "deployment default"

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        registry_changed()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        registry_changed()

    def delete_queryset(self, request, queryset):
        super().delete_queryset(request, queryset)
        registry_changed()
