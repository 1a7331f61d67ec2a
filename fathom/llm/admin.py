"""Admin for the model registry. The API key is write-only: the form takes a new key, the pages only
ever show its last four characters. A staff user who is not a superuser sees and edits only the
models and assignments of their workspaces; deployment-wide models, their sharing and the deployment's
key are a superuser's. The rules are fathom.llm.services' (the same checks as REST and the CLI)."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError

from fathom.admin_scoping import WorkspaceScoped, WorkspaceScopedAdmin
from fathom.auth import request_actor, workspaces_operated_by
from fathom.errors import ApplicationError
from fathom.llm import ROLES
from fathom.llm.models import LLMModel, ModelAssignment
from fathom.llm.registry import models_usable_by, registry_changed
from fathom.llm.services import base_url_check, model_share, registry_change_record

# What only a superuser sets: a deployment-wide model's use of the environment's key and its sharing.
SUPERUSER_FIELDS = ("uses_deployment_key", "shared_with")


class LLMModelForm(forms.ModelForm):
    api_key = forms.CharField(
        required=False, strip=True, widget=forms.PasswordInput(render_value=False),
        help_text="Leave blank to keep the current key. Stored encrypted; only the last 4 characters are shown.")
    base_url = forms.URLField(required=False, assume_scheme="http", max_length=500,
                              help_text="for openai-compatible servers, e.g. http://localhost:11434/v1")
    clear_api_key = forms.BooleanField(required=False, help_text="Remove the stored key.")

    class Meta:
        model = LLMModel
        fields = ["workspace", "name", "provider", "model", "api", "base_url", "uses_deployment_key", "shared_with",
                  "input_price_per_mtok", "output_price_per_mtok", "cached_input_price_per_mtok", "context_window",
                  "max_output_tokens", "timeout_seconds", "options"]

    def clean(self):
        data = super().clean()
        if data.get("workspace") is not None:
            if data.get("uses_deployment_key") or data.get("shared_with"):
                raise ValidationError("a workspace's model neither uses the deployment's key nor is shared")
            try:
                base_url_check(data.get("base_url") or "")
            except ApplicationError as exc:
                raise ValidationError({"base_url": exc.message}) from None
        duplicate = LLMModel.objects.filter(workspace=data.get("workspace"), name=data.get("name"))
        if self.instance.pk:
            duplicate = duplicate.exclude(pk=self.instance.pk)
        if duplicate.exists():
            raise ValidationError({"name": "a model of this name exists already there"})
        return data

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

    def clean(self):
        data = super().clean()
        workspace, model = data.get("workspace"), data.get("model")
        if model is None:
            return data
        if workspace is None and model.workspace_id is not None:
            raise ValidationError({"model": "a deployment default must be a deployment-wide model"})
        if workspace is not None and not models_usable_by(workspace=workspace).filter(pk=model.pk).exists():
            raise ValidationError({"model": "this workspace may not use that model"})
        return data


class AssignmentInline(WorkspaceScoped, admin.TabularInline):
    model = ModelAssignment
    form = AssignmentForm
    extra = 0
    fields = ["workspace", "role"]


@admin.register(LLMModel)
class LLMModelAdmin(WorkspaceScopedAdmin):
    form = LLMModelForm
    list_display = ["name", "owner", "provider", "model", "base_url", "key", "input_price_per_mtok",
                    "output_price_per_mtok", "context_window", "updated_at"]
    list_filter = ["provider"]
    list_select_related = ["workspace"]
    search_fields = ["name", "model"]
    readonly_fields = ["key"]
    inlines = [AssignmentInline]

    def get_fields(self, request, obj=None):
        fields = super().get_fields(request, obj)
        if request.user.is_superuser:
            return fields
        return [name for name in fields if name not in SUPERUSER_FIELDS]

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        if not request.user.is_superuser:
            form.base_fields["workspace"].required = True
        return form

    @admin.display(description="belongs to")
    def owner(self, obj):
        return obj.workspace.slug if obj.workspace_id else "deployment"

    @admin.display(description="API key")
    def key(self, obj):
        if obj.api_key_hint:
            return obj.api_key_hint
        return "(environment)" if obj.uses_deployment_key and obj.workspace_id is None else "(none)"

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if form.instance.workspace_id is None:
            model_share(model=form.instance, workspaces=form.instance.shared_with.all())
        registry_changed()
        registry_change_record("updated" if change else "created", workspace=form.instance.workspace_id,
                               actor=request_actor(request), model=form.instance.name,
                               fields=sorted(form.changed_data))

    def delete_model(self, request, obj):
        workspace_id, name = obj.workspace_id, obj.name
        super().delete_model(request, obj)
        registry_changed()
        registry_change_record("deleted", workspace=workspace_id, actor=request_actor(request), model=name)


@admin.register(ModelAssignment)
class ModelAssignmentAdmin(WorkspaceScopedAdmin):
    form = AssignmentForm
    list_display = ["role", "model", "scope"]
    list_filter = ["role", ("workspace", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["model", "workspace"]

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "model" and not request.user.is_superuser:
            kwargs["queryset"] = LLMModel.objects.filter(workspace__in=workspaces_operated_by(request.user))
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if db_field.name == "workspace" and not request.user.is_superuser:
            field.required = True
        return field

    @admin.display(description="applies to")
    def scope(self, obj):
        return obj.workspace.slug if obj.workspace_id else "deployment default"

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        registry_changed()
        registry_change_record("assigned", workspace=obj.workspace_id, actor=request_actor(request),
                               model=obj.model.name, role=obj.role)

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        registry_changed()

    def delete_queryset(self, request, queryset):
        super().delete_queryset(request, queryset)
        registry_changed()
