"""The model registry: which models exist (with their encrypted keys and prices), and which model
answers each role, per workspace or for the whole deployment.

A model belongs to one workspace: only that workspace lists it, calls it, assigns it or sees its name.
A deployment-wide model (no workspace) is a superuser's: it reaches a workspace only through
`shared_with`, and only it may use the deployment's key from the environment (`uses_deployment_key`)."""

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from fathom import crypto
from fathom.tenancy import Workspace

ANY_ROLE = "*"
role_validator = RegexValidator(r"^(\*|[a-z][a-z0-9_-]{0,47})$", "a role is a lowercase word (or * for any role)")


class Provider(models.TextChoices):
    OPENAI = "openai", "OpenAI (Chat Completions or Responses)"
    ANTHROPIC = "anthropic", "Anthropic (Messages)"
    OPENAI_COMPATIBLE = "openai-compatible", "OpenAI-compatible (Ollama, vLLM, llama.cpp) by base URL"
    OFFLINE = "offline", "Offline (deterministic, no network)"
    SCRIPTED = "scripted", "Scripted (tests)"


class OpenAIApi(models.TextChoices):
    """Which of OpenAI's two protocols an openai or openai-compatible model is called through."""

    CHAT_COMPLETIONS = "chat_completions", "Chat Completions (/v1/chat/completions)"
    RESPONSES = "responses", "Responses (/v1/responses)"


class LLMModel(models.Model):
    """A model Fathom can call. The API key is stored encrypted (Fernet, FATHOM_ENCRYPTION_KEY);
    only its last four characters are ever shown, and never to a workspace it is shared with. A blank
    key is no key, unless a superuser set `uses_deployment_key` (then OPENAI_API_KEY or
    ANTHROPIC_API_KEY). A blank base URL is the provider's own (OLLAMA_HOST for openai-compatible)."""

    workspace = models.ForeignKey(Workspace, null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="llm_models", help_text="blank: deployment-wide (superusers only)")
    shared_with = models.ManyToManyField(Workspace, blank=True, related_name="shared_llm_models",
                                         help_text="deployment-wide models only: the workspaces that may use it")
    uses_deployment_key = models.BooleanField(
        default=False, help_text="deployment-wide models only: with a blank key, use the provider's key from the "
                                 "server's environment")
    name = models.SlugField(max_length=100, help_text="how roles and the CLI refer to it")
    provider = models.CharField(max_length=32, choices=Provider.choices)
    model = models.CharField(max_length=200, help_text="the provider's model name, e.g. gpt-4o-mini")
    base_url = models.URLField(max_length=500, blank=True, help_text="for openai-compatible servers, e.g. "
                               "http://localhost:11434/v1")
    api = models.CharField(max_length=20, choices=OpenAIApi.choices, default=OpenAIApi.CHAT_COMPLETIONS,
                           help_text="openai and openai-compatible models: the protocol they are called through")
    api_key_encrypted = models.TextField(blank=True, editable=False)
    api_key_last4 = models.CharField(max_length=4, blank=True, editable=False)
    input_price_per_mtok = models.DecimalField("input $ / 1M tokens", max_digits=12, decimal_places=6,
                                               default=Decimal(0), validators=[MinValueValidator(0)])
    output_price_per_mtok = models.DecimalField("output $ / 1M tokens", max_digits=12, decimal_places=6,
                                                default=Decimal(0), validators=[MinValueValidator(0)])
    cached_input_price_per_mtok = models.DecimalField(
        "cached input $ / 1M tokens", max_digits=12, decimal_places=6, null=True, blank=True,
        validators=[MinValueValidator(0)], help_text="blank: cached tokens cost the input price")
    context_window = models.PositiveIntegerField(default=128_000)
    max_output_tokens = models.PositiveIntegerField(default=4096)
    timeout_seconds = models.FloatField(default=60, validators=[MinValueValidator(0.1)],
                                        help_text="per attempt")
    options = models.JSONField(default=dict, blank=True,
                               help_text="default call options, e.g. {\"temperature\": 0.2}")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM model"
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="llmmodel_unique_workspace_name"),
            models.UniqueConstraint(fields=["name"], condition=models.Q(workspace=None),
                                    name="llmmodel_unique_deployment_name"),
        ]

    def __str__(self):
        return f"{self.name} ({self.provider}:{self.model})"

    def clean(self):
        if self.workspace_id is not None and self.uses_deployment_key:
            raise ValidationError({"uses_deployment_key": "only a deployment-wide model may use the deployment's key"})
        if self.api == OpenAIApi.RESPONSES and self.provider not in (Provider.OPENAI, Provider.OPENAI_COMPATIBLE):
            raise ValidationError({"api": "the Responses API is for openai and openai-compatible models only"})

    def set_api_key(self, api_key: str) -> None:
        api_key = (api_key or "").strip()
        self.api_key_encrypted = crypto.encrypt(api_key) if api_key else ""
        self.api_key_last4 = api_key[-4:] if api_key else ""

    def get_api_key(self) -> str:
        return crypto.decrypt(self.api_key_encrypted) if self.api_key_encrypted else ""

    @property
    def api_key_hint(self) -> str:
        return f"…{self.api_key_last4}" if self.api_key_last4 else ""


class ModelAssignment(models.Model):
    """Role -> model. With a workspace it applies there; without one it is the deployment default.
    Role "*" covers every role not named on its own."""

    workspace = models.ForeignKey(Workspace, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                                  help_text="blank: the deployment default")
    role = models.CharField(max_length=48, validators=[role_validator])
    model = models.ForeignKey(LLMModel, on_delete=models.PROTECT, related_name="assignments")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace_id", "role"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "role"], name="modelassignment_unique_workspace_role"),
            models.UniqueConstraint(fields=["role"], condition=models.Q(workspace=None),
                                    name="modelassignment_unique_default_role"),
        ]

    def __str__(self):
        where = self.workspace.slug if self.workspace_id else "deployment default"
        return f"{self.role} -> {self.model.name} ({where})"
