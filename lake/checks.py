"""The lake's system checks (run by every management command, `fathom up` among them): a misconfigured
embedder stops the start with its reason, rather than failing the first delta it would embed."""

from django.conf import settings
from django.core.checks import Error, register

from lake.embedders import configuration_problem


@register()
def embedder_configured(app_configs, **kwargs) -> list[Error]:
    """The configured embedder runs its model at its dimensions (told by their names: the local model's
    weights are not loaded for it)."""
    problem = configuration_problem(settings.EMBEDDER, settings.EMBEDDING_MODEL, settings.EMBEDDING_DIMENSIONS)
    return [Error(problem, id="lake.E001")] if problem else []
