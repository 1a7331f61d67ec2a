"""Providers turn an LLMRequest into a Completion (or a stream of chunks) for one wire protocol.

Each is a class with `complete(request, *, timeout) -> Completion` and
`stream(request, *, timeout) -> Iterator[StreamChunk]` (the last chunk carries the completion), and,
where the provider has embeddings, `embed(request, texts, *, timeout) -> Embeddings`, raising
`fathom.llm.errors.LLMError` subclasses. They leave cost, latency and ids to the caller
(`fathom.llm.client`), and never retry themselves. A provider whose models can think before they answer
has `thinking_options(level) -> dict`: the options that ask for it (see `thinking_options` below)."""

from functools import cache

from django.utils.module_loading import import_string

from fathom.llm.errors import LLMNotConfigured

PROVIDERS = {
    "offline": "fathom.llm.offline.OfflineProvider",
    "scripted": "fathom.llm.scripted.ScriptedProvider",
    "openai": "fathom.llm.providers.openai.OpenAIProvider",
    "openai-compatible": "fathom.llm.providers.openai.OpenAICompatibleProvider",
    "anthropic": "fathom.llm.providers.anthropic.AnthropicProvider",
}


@cache
def get_provider(name: str):
    path = PROVIDERS.get(name)
    if path is None:
        raise LLMNotConfigured(f"unknown provider {name!r} (one of {', '.join(PROVIDERS)})", provider=name)
    return import_string(path)()


THINKING_LEVELS = ("low", "medium", "high")


def thinking_options(provider: str, level: str) -> dict | None:
    """The options of `complete` that make a model of `provider` think at `level` (one of
    THINKING_LEVELS) and show its thinking (`Completion.thinking`); None when its models cannot."""
    if level not in THINKING_LEVELS:
        raise ValueError(f"thinking level must be one of {', '.join(THINKING_LEVELS)}, got {level!r}")
    implementation = get_provider(provider)
    return implementation.thinking_options(level) if hasattr(implementation, "thinking_options") else None
