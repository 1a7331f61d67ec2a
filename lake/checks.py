"""The lake's system checks (run by every management command, `fathom up` among them): a misconfigured
embedder stops the start with its reason, rather than failing the first delta it would embed."""

from django.conf import settings
from django.core.checks import Error, register

from lake import minilm
from lake.embedders import HASHING_MODELS, LocalEmbedder


@register()
def embedder_configured(app_configs, **kwargs) -> list[Error]:
    """The configured embedder's model is one it runs, at the dimensions it makes (checked by name: the
    local model's weights are not loaded for it)."""
    known = {"hashing": HASHING_MODELS, "local": LocalEmbedder.MODELS}.get(settings.EMBEDDER)
    if known and settings.EMBEDDING_MODEL not in known:
        return [Error(f"FATHOM_EMBEDDER={settings.EMBEDDER} runs {', '.join(known)}; FATHOM_EMBEDDING_MODEL is "
                      f"{settings.EMBEDDING_MODEL!r}", id="lake.E001")]
    if settings.EMBEDDER == "local" and settings.EMBEDDING_DIMENSIONS != minilm.DIMENSIONS:
        return [Error(f"{settings.EMBEDDING_MODEL} makes {minilm.DIMENSIONS}-dimension vectors; set "
                      f"EMBEDDING_DIMENSIONS={minilm.DIMENSIONS} (it is {settings.EMBEDDING_DIMENSIONS})",
                      id="lake.E002")]
    return []
