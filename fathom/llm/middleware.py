"""Model middleware: code that runs around every model call, as Django's MIDDLEWARE runs around
every request. Festinger's recollection injector and loop guard, and the quality harness, plug in
here, so a fire and a proxied Ollama request get the same treatment.

`settings.FATHOM_MODEL_MIDDLEWARE` lists dotted paths of classes, instantiated once per process
with no arguments. For each call:

    before(request)             in list order; may change `request.messages` (and the other fields)
                                in place, or return a Completion to answer without calling the
                                model (the middlewares after it, and the provider, are skipped)
    after(request, completion)  in reverse order, for every middleware whose `before` ran; may
                                return a replacement Completion (None keeps the one given)

Either method may be left out. For a streamed call `after` sees the assembled completion once the
stream has ended (the chunks already went to the caller).

Middleware keeping state per conversation (Festinger's counting) reads the call's `conversation`
option (`complete(..., conversation=key)`, in `request.options`; providers never send it): a key naming
the conversation the call belongs to (a proxy's session, a thread), or False for a call that is no
conversation (the harness reading a brief it composed itself). Without it, middleware derives one. An exception in a middleware fails the
call like a provider error would, and is traced."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from fathom.llm.registry import ResolvedModel
from fathom.llm.types import Completion, Message, ToolSpec


@dataclass(slots=True)
class LLMRequest:
    """One model call on its way through middleware to a provider. Mutable on purpose: middleware
    edits it. `metadata` is free space for middleware to pass notes from `before` to `after`."""

    workspace_id: int
    role: str
    model: ResolvedModel
    messages: list[Message]
    tools: list[ToolSpec] | None = None
    response_format: dict | None = None
    options: dict[str, Any] = field(default_factory=dict)
    stream: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    call_id: str = ""
    trace_id: str = ""

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return ""


class ModelMiddleware:
    """Optional base class, documenting the two hooks."""

    def before(self, request: LLMRequest) -> Completion | None:
        return None

    def after(self, request: LLMRequest, completion: Completion) -> Completion | None:
        return None


def run_before(request: LLMRequest) -> tuple[list, Completion | None]:
    """Run every `before`; returns the middlewares entered and a short-circuit completion, if any.
    A request made with `fresh_context` (the quality harness's verifier) runs none of them."""
    if request.metadata.get("fresh_context"):
        return [], None
    entered = []
    for middleware in loaded():
        entered.append(middleware)
        hook = getattr(middleware, "before", None)
        if hook is None:
            continue
        answer = hook(request)
        if isinstance(answer, Completion):
            return entered, answer
    return entered, None


def run_after(entered: list, request: LLMRequest, completion: Completion) -> Completion:
    for middleware in reversed(entered):
        hook = getattr(middleware, "after", None)
        if hook is None:
            continue
        replaced = hook(request, completion)
        if isinstance(replaced, Completion):
            completion = replaced
    return completion


def loaded() -> tuple:
    return _load(tuple(settings.FATHOM_MODEL_MIDDLEWARE))


@cache
def _load(paths: tuple[str, ...]) -> tuple:
    return tuple(import_string(path)() for path in paths)


@receiver(setting_changed)
def _reload(setting, **_kwargs):
    if setting == "FATHOM_MODEL_MIDDLEWARE":
        _load.cache_clear()
