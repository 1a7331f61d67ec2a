"""The proxy's model table: which upstream answers a model name that a client sends."""

from django.db import models

from fathom.models import WorkspaceScoped


class ProxyRoute(WorkspaceScoped):
    """A model name the proxy serves in a workspace, and who answers it: a model of the registry
    (`fathom.llm`: OpenAI, Anthropic, the offline model ...) or a model of the Ollama at OLLAMA_HOST
    under another name. Names not in this table are looked up in the registry, then sent to Ollama."""

    class Upstream(models.TextChoices):
        REGISTRY = "registry", "a model of the registry (by its name, or provider:model)"
        OLLAMA = "ollama", "a model of the Ollama at OLLAMA_HOST"

    name = models.CharField(max_length=200, help_text="the model name clients send, e.g. llama3.2:latest")
    upstream = models.CharField(max_length=16, choices=Upstream.choices, default=Upstream.REGISTRY)
    target = models.CharField(max_length=200, help_text="the registry model's name (or provider:model), or "
                                                        "the Ollama model's name")
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="festinger_proxyroute_unique_name")]

    def __str__(self):
        return f"{self.name} -> {self.upstream}:{self.target}"
