"""The dashboard's forms: they parse what a form posts; the services decide what is valid."""

from django import forms

from fathom.llm.models import Provider
from festinger.resolution import DECISIONS

MODEL_PROVIDERS = [(p.value, p.label) for p in Provider if p not in (Provider.SCRIPTED, Provider.OFFLINE)]


class AskForm(forms.Form):
    question = forms.CharField(max_length=20_000, widget=forms.Textarea(attrs={"rows": 2}))


class ProposalEditForm(forms.Form):
    payload = forms.JSONField(help_text="the payload to approve instead, as JSON")


class ConflictOverrideForm(forms.Form):
    decision = forms.ChoiceField(choices=[(d, d) for d in DECISIONS])
    existing_dimension = forms.CharField(required=False, max_length=200)
    new_dimension = forms.CharField(required=False, max_length=200)
    dimension = forms.CharField(required=False, max_length=200)
    reasoning = forms.CharField(required=False, max_length=2000)


class WorkspaceForm(forms.Form):
    slug = forms.SlugField(max_length=64, help_text="lowercase letters, digits, hyphens")
    name = forms.CharField(max_length=200, required=False)


class ModelKeyForm(forms.Form):
    provider = forms.ChoiceField(choices=MODEL_PROVIDERS)
    model = forms.CharField(max_length=200, help_text="e.g. gpt-4o-mini, claude-sonnet-4-5, llama3.1")
    base_url = forms.URLField(required=False, assume_scheme="http", help_text="OpenAI-compatible servers only")
    api_key = forms.CharField(required=False, widget=forms.PasswordInput(render_value=False),
                              help_text="stored encrypted; blank: the model is called without a key")


class DeltaForm(forms.Form):
    content = forms.CharField(max_length=100_000, widget=forms.Textarea(attrs={"rows": 3}))
    tags = forms.CharField(required=False, help_text="comma-separated, e.g. kind:note, topic:onboarding")

    def clean_tags(self):
        return [tag.strip() for tag in self.cleaned_data["tags"].split(",") if tag.strip()]
