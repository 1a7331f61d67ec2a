"""One proxied call through the model middleware (recollections in, the loop guard around it).

For an Ollama upstream the proxy runs the middleware itself around the bytes it forwards:
`ProxiedCall.prepare` (in a thread, before the request goes upstream) turns Ollama's messages into the
project's, runs every `before`, and gives back the messages to forward (Ollama's own objects, with images
and every other field kept, changed only where the middleware changed them). Once the answer is whole, the
loop guard counts it into its conversation's state (`ProxiedCall.observe`, a Redis round trip, in a thread
once the answer's last bytes are out, before them when the answer was cut; the conversation's next turn
waits for it: festinger.proxy.app.AnswerCount). Once the client has its last byte, its outcome
(`ProxiedCall.outcome`: the request as the middleware left it, the assembled answer) goes to the `memory`
queue (`outcomes_send`, with the other calls the proxy finished meanwhile): `proxied_calls_finish`, in a
worker, runs every `after` (counting, cues to the memory queue, the loop guard's record) inside a
`festinger.proxy.call` span (T33: the response never waits for the write path, and the proxy process does
none of it but the loop guard's count). For a registry model, `fathom.llm.complete` runs the same
middleware itself, except when an OpenAI client asks for several choices: one turn of the conversation, so
the proxy runs the middleware once around them as it does for Ollama (the first choice is the answer it
learns from and watches for loops)."""

from __future__ import annotations

import itertools
import logging
import os
import secrets
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from celery import signature

from fathom.llm import middleware
from fathom.llm.middleware import LLMRequest
from fathom.llm.registry import ResolvedModel
from fathom.llm.types import Completion, Message
from fathom.redis_client import get_redis
from fathom.tracing.spans import span
from festinger.learning import conversation_session
from festinger.loops.conversations import ConversationName, proxied_conversation
from festinger.loops.guard import loop_observe
from festinger.proxy import wire
from festinger.proxy.upstreams import Upstream
from festinger.recollection import held

log = logging.getLogger(__name__)

PROXY_ROLE = "proxy"
FINISH_TASK = "memory.festinger_proxy_calls_finish"
# A finished call is finished once (a retried task must not count an answer twice), for longer than a
# task's retries last (fathom.transient: at most six, two minutes apart at most).
_FINISHED_KEY = "festinger:proxy:finished:{call_id}"
_FINISHED_SECONDS = 3600
# A call's id: this process's random prefix (a forked child draws its own) and a counter; a random
# id per call would be a system call.
_CALLS = itertools.count(1)


def _process_id_new() -> None:
    global _process_id
    _process_id = secrets.token_hex(4)


_process_id_new()
os.register_at_fork(after_in_child=_process_id_new)
# Filled by `NotesMiddleware.after` for the proxy's span: what was forwarded after all middleware.
call_notes: ContextVar[dict | None] = ContextVar("festinger_proxy_call_notes", default=None)


class NotesMiddleware:
    """Model middleware, last in the list: tells the proxy (when a proxied call runs) the system
    prompt as it was forwarded and what the recollection recalled, for the call's trace."""

    def after(self, request, completion):
        notes = call_notes.get()
        if notes is not None:
            system = next((m.content for m in request.messages if m.role == "system"), "")
            notes.update(forwarded_system=_clip(system, 4000), messages=len(request.messages),
                         festinger=request.metadata.get("festinger"), loops=_loop_level(request.metadata))
        return None


@dataclass
class ProxiedCall:
    workspace_id: int
    upstream: Upstream | None
    raw_messages: list[dict]
    conversation: ConversationName
    options: dict = field(default_factory=dict)
    thinking: dict = field(default_factory=dict)  # a registry model's options that make it think (Ollama's `think`)
    request: LLMRequest | None = None
    entered: list = field(default_factory=list)
    answer: Completion | None = None
    notes: dict = field(default_factory=dict)
    sends: list = field(default_factory=list)  # to the memory queue once the response is out (recollection's)
    learn_later: list = field(default_factory=list)  # learns from the messages marked seen on the way in (`learn`)
    loop_settings: object = None
    call_id: str = field(default_factory=lambda: f"proxy-{_process_id}-{next(_CALLS)}")

    def prepare(self, *, model: ResolvedModel | None = None, store_image=None) -> None:
        """Run every middleware's `before` (for an Ollama upstream, or several answers of a registry
        `model`, whose images `store_image` keeps); sets `answer` when one answered."""
        with session_context(self.conversation), held(self.sends, self.learn_later):
            model = model or ResolvedModel(name=self.upstream.name, provider="ollama", model=self.upstream.target)
            self.request = LLMRequest(workspace_id=self.workspace_id, role=PROXY_ROLE, model=model,
                                      messages=wire.to_messages(self.raw_messages, store_image=store_image),
                                      options=dict(self.options), call_id=self.call_id)
            self._originals = {id(message): raw for message, raw in zip(self.request.messages, self.raw_messages,
                                                                          strict=True)}
            self._original_messages = list(self.request.messages)
            self.entered, self.answer = middleware.run_before(self.request)

    def learn(self) -> None:
        """Learn from the messages the middleware marked seen on the way in: the marks were sent with the
        call, their answers are read now (once the upstream request is out, the round trips overlap)."""
        learn_later, self.learn_later = self.learn_later, []
        if learn_later:
            with session_context(self.conversation), held(self.sends):
                for learning in learn_later:
                    try:
                        learning()
                    except Exception:  # the others are still read (each holds a connection until then)
                        log.exception("festinger proxy: learning from call %s failed", self.call_id)

    def forwarded_messages(self) -> list[dict]:
        """The messages to send upstream: the client's objects where the middleware left them alone,
        with new content where it changed it, and the ones it added."""
        used, forwarded = set(), []
        for message in self.request.messages:
            raw = self._originals.get(id(message))
            if raw is None:
                raw = self._edited_original(message, used)
            if raw is None:
                forwarded.append(wire.message_dict(message))
                continue
            used.add(id(raw))
            forwarded.append(raw if raw.get("content", "") == message.content else {**raw, "content": message.content})
        return forwarded

    def forwarded_options(self) -> dict:
        return self.request.options

    def observe(self, completion: Completion, cut: str | None = None) -> None:
        """The loop guard counts the answer now, before the conversation's next turn (the proxy sees to it:
        festinger.proxy.app.AnswerCount), so that turn, however soon it comes, meets the state this one
        left (its record waits for `finish`)."""
        if self.request is not None:
            loop_observe(self.request, completion, cut=cut)

    def outcome(self, completion: Completion, kind: str, stream_cut: str | None = None) -> dict:
        """The call as plain JSON: the request as the middleware left it (its model without a key), and
        the answer."""
        model = self.request.model
        return {"workspace_id": self.workspace_id, "conversation": self.conversation.as_dict(), "call_id": self.call_id, "kind": kind,
                "stream_cut": stream_cut, "entered": len(self.entered),
                "upstream": {"name": self.upstream.name, "kind": self.upstream.kind, "target": self.upstream.target},
                "model": {"name": model.name, "provider": model.provider, "model": model.model},
                "messages": [message.to_dict() for message in self.request.messages],
                "options": self.request.options, "metadata": self.request.metadata,
                "completion": completion.to_dict()}

    def finish(self, completion: Completion, kind: str, stream_cut: str | None = None) -> None:
        """Every `after` (counting, learning, loop detection) and the trace."""
        with session_context(self.conversation), call_notes_context(self.notes):
            with span("festinger.proxy.call", workspace=self.workspace_id, actor_id="festinger:proxy",
                      call_id=self.call_id) as call:
                call.set(model=self.upstream.name, upstream=self.upstream.kind, target=self.upstream.target,
                         endpoint=kind, text=_clip(completion.text, 500), stream_cut=bool(stream_cut))
                if stream_cut:
                    self.request.metadata["loop_stream_cut"] = stream_cut
                self.request.trace_id = call.trace_id
                middleware.run_after(self.entered, self.request, completion)
                call.set(**{k: v for k, v in self.notes.items() if v is not None})

    def _edited_original(self, message: Message, used: set) -> dict | None:
        # A message the middleware replaced (the recollection prepended to the system prompt): the
        # client's object of the same role whose content the new one ends with.
        for original, raw in zip(self._original_messages, self.raw_messages, strict=True):
            if id(raw) in used or original.role != message.role:
                continue
            if original.content and message.content.endswith(original.content):
                return raw
        return None


def outcomes_send(outcomes: list[dict]) -> None:
    """Queue the work after these proxied calls (their `ProxiedCall.outcome`s) on the memory queue, in
    one message."""
    signature(FINISH_TASK).apply_async((outcomes,), ignore_result=True)


def proxied_calls_finish(*, outcomes: list[dict]) -> int:
    """The work after proxied calls' responses (their `ProxiedCall.outcome`s): every `after` and the
    trace of each, once per call (a redelivered or retried batch skips the calls it began before). How
    many it finished."""
    with get_redis().pipeline(transaction=False) as pipe:
        for outcome in outcomes:
            pipe.set(_FINISHED_KEY.format(call_id=outcome["call_id"]), 1, nx=True, ex=_FINISHED_SECONDS)
        first_time = pipe.execute()
    for outcome, ours in zip(outcomes, first_time, strict=True):
        if ours:
            _finish(outcome)
    return sum(1 for ours in first_time if ours)


def _finish(outcome: dict) -> None:
    upstream = Upstream(**outcome["upstream"])
    call = ProxiedCall(workspace_id=outcome["workspace_id"], upstream=upstream, raw_messages=[],
                       conversation=ConversationName(**outcome["conversation"]), call_id=outcome["call_id"],
                       entered=list(middleware.loaded()[:outcome["entered"]]))
    call.request = LLMRequest(workspace_id=call.workspace_id, role=PROXY_ROLE,
                              model=ResolvedModel(**outcome["model"]),
                              messages=[Message.from_dict(m) for m in outcome["messages"]],
                              options=dict(outcome["options"]), metadata=dict(outcome["metadata"]),
                              call_id=call.call_id)
    call.finish(Completion.from_dict(outcome["completion"]), outcome["kind"], outcome["stream_cut"])


@contextmanager
def session_context(conversation: ConversationName):
    """Meanwhile, the call's conversation is the loop guard's, and learning's when the client named it."""
    named = conversation_session.set(conversation.name if conversation.named else None)
    proxied = proxied_conversation.set(conversation)
    try:
        yield
    finally:
        proxied_conversation.reset(proxied)
        conversation_session.reset(named)


@contextmanager
def call_notes_context(notes: dict):
    token = call_notes.set(notes)
    try:
        yield
    finally:
        call_notes.reset(token)


def _loop_level(metadata: dict):
    loops = metadata.get("loops")
    return None if loops is None else {"session": loops["session"], "level": loops["level"],
                                       "events": [str(e["kind"]) for e in loops["events"]]}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
