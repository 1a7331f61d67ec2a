"""The proxy's thread bridge: what runs in its threads, off the event loop, since it is Django's or a
model call's blocking work (the database, the model middleware's `before`, a registry model's call), and
how its results come back.

`prepare` resolves a call's upstream and runs the middleware, in a thread; `prepare_from_memory` does
the same on the event loop when the caches it reads say they hold all it needs (the usual case), and
says so, or does nothing. `RegistryStream` runs a registry model's
call in a thread and carries its chunks to the event loop through a queue (abandoning the call at its
next chunk once `abandon` is called: the client left). The rest are a registry model's embeddings and
the work handed off after a response (the memory queue's messages). The proxy runs them all through
`ProxyApp.in_thread` (`fathom.threads.in_thread` on its own threads), which gives each thread's database
connection back when its work is done."""

from __future__ import annotations

import asyncio
import logging
import threading

from django.conf import settings
from django.utils.module_loading import import_string

from fathom.channels import from_memory
from fathom.errors import ApplicationError
from fathom.llm import client as llm_client
from fathom.llm.errors import LLMError
from fathom.llm.providers import thinking_options
from fathom.llm.types import Completion, ImageRef, StreamChunk
from fathom.tenancy import Workspace
from fathom.tracing.spans import span
from festinger import cache
from festinger.loops.guard import loop_settings, loop_settings_held, stream_cut_observe
from festinger.proxy import wire
from festinger.proxy.calls import (
    ProxiedCall,
    call_notes_context,
    outcomes_send,
    session_context,
)
from festinger.proxy.upstreams import OLLAMA, Upstream, upstream_for, upstream_held
from festinger.proxy.wire import WireError

log = logging.getLogger(__name__)

# Ollama options a registry model understands, under the names `complete` takes.
_REGISTRY_OPTIONS = {"temperature": "temperature", "top_p": "top_p", "num_predict": "max_tokens", "stop": "stop",
                     "seed": "seed"}


def prepare(call: ProxiedCall, body: dict, choices: int) -> Upstream | None:
    """Resolve the model; run the middleware's `before` for an Ollama upstream, and for a registry
    model asked for several choices (one conversation turn: the middleware runs once, here, and the
    model calls go without it). A single registry call runs it inside `fathom.llm.complete`. A registry
    request the client must mend (its tools, format or `think`) is its 400 before the middleware runs."""
    upstream = upstream_for(workspace_id=call.workspace_id, name=wire.model_name(body))
    return _prepare(call, body, choices, upstream, loop_settings(call.workspace_id))


def prepare_from_memory(call: ProxiedCall, body: dict, choices: int) -> bool:
    """`prepare` here (the event loop: no thread's round trip) when everything it reads is in this
    process's memory, current: the upstream, the loop guard's thresholds and the world. False, with
    nothing done, when a cache must be read from the database first (or images stored: several choices
    of a registry model), so `prepare` must run in a thread."""
    with from_memory():
        held, upstream = upstream_held(workspace_id=call.workspace_id, name=wire.model_name(body))
        if not (held and loop_settings_held(call.workspace_id) and cache.world_held(call.workspace_id)):
            return False
        if upstream is not None and upstream.kind != OLLAMA and choices > 1:
            return False
        _prepare(call, body, choices, upstream, loop_settings(call.workspace_id))
        return True


class RegistryStream:
    """One answer (choice `index`) of a registry model, called in a thread and streamed to the event
    loop: `next()` is its next StreamChunk, the one with the whole completion last; an error of the
    call is raised there."""

    def __init__(self, in_thread, call: ProxiedCall, body: dict, kind: str, index: int = 0):
        self.chunks: asyncio.Queue = asyncio.Queue()
        self.abandoned = threading.Event()
        loop = asyncio.get_running_loop()
        self.running = in_thread(_registry_call, call, body, kind, index, self.abandoned,
                                 lambda item: loop.call_soon_threadsafe(self.chunks.put_nowait, item))

    async def next(self) -> StreamChunk:
        item = await self.chunks.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def abandon(self) -> None:
        """The model call, if still running, stops at its next chunk."""
        self.abandoned.set()


def registry_embeddings(workspace_id: int, upstream: Upstream, texts: list[str]) -> tuple[list, int]:
    """A registry model's embeddings of `texts`, and their tokens (`fathom.llm.embed`: the offline
    model's are the project's embedder's)."""
    if not texts:
        return [], 0
    answer = llm_client.embed(workspace=workspace_id, model=upstream.model, texts=texts, actor_id="festinger:proxy")
    return answer.vectors, answer.usage.input_tokens


def image_store(workspace_id: int):
    """Base64 image -> an ImageRef of the lake's copy (registry providers read images by hash)."""
    store = import_string(settings.FATHOM_MEDIA_STORE)
    workspace = Workspace(pk=workspace_id)

    def keep(image) -> ImageRef:
        try:
            row, _ = store(workspace=workspace, data=wire.image_bytes(image))
        except ApplicationError as exc:
            raise WireError(exc.status_code if 400 <= exc.status_code < 500 else 400, f"invalid image: {exc}") from None
        return ImageRef(row.hash, getattr(row, "media_type", "image/png"))

    return keep


# --- after a response --------------------------------------------------------------------------------

def sends_run(sends: list) -> None:
    for send in sends:
        send()


def outcomes_queue(finished: list[tuple]) -> None:
    """The finished calls' outcomes, in one message to the memory queue."""
    outcomes_send([call.outcome(completion, kind, stream_cut) for call, completion, kind, stream_cut in finished])


def answer_count(call: ProxiedCall, completion: Completion, cut: str | None) -> None:
    """The loop guard counts an answer into its followed conversation's state (a Redis round trip), once
    the answer is out, or before its last byte when it was cut."""
    call.observe(completion, cut)


def stream_cut_count(call: ProxiedCall, completion: Completion, unit: str) -> None:
    """A registry answer cut for repeating itself (its call ran the middleware itself): the loop guard
    counts it like any other answer, before the answer's last byte goes out."""
    stream_cut_observe(workspace_id=call.workspace_id, conversation=call.conversation,
                       completion=completion, unit=unit, model=call.upstream.name)


def logged(function):
    def run(*args):
        try:
            function(*args)
        except Exception:
            log.exception("festinger proxy: the work after a response failed")
    return run


# --- internals ------------------------------------------------------------------------------------------

def _prepare(call: ProxiedCall, body: dict, choices: int, upstream: Upstream | None, thresholds) -> Upstream | None:
    name = wire.model_name(body)
    call.upstream, call.loop_settings = upstream, thresholds
    if upstream is None:
        return None
    if upstream.kind == OLLAMA:
        if body.get("raw") is not True:
            call.prepare()
        return upstream
    wire.to_tool_specs(body.get("tools"))
    wire.to_response_format(body.get("format"))
    call.thinking = _registry_thinking(name, upstream, body)
    if choices > 1:
        call.prepare(model=upstream.model, store_image=image_store(call.workspace_id))
    return upstream


class _Abandoned(Exception):
    """Raised from the stream callback once the client left: abandons the model call."""


def _registry_call(call: ProxiedCall, body: dict, kind: str, index: int, abandoned: threading.Event, put) -> None:
    """Stream a registry model's answer (choice `index`) to `put`, the whole completion last. The
    middleware runs inside `fathom.llm.complete`, unless the proxy ran it already (`call.request`:
    several choices), when the calls go without it."""

    def relay(chunk: StreamChunk) -> None:
        if abandoned.is_set():
            raise _Abandoned
        put(chunk)

    with session_context(call.conversation), call_notes_context(call.notes):
        try:
            tools = wire.to_tool_specs(body.get("tools"))
            response_format = wire.to_response_format(body.get("format"))
            if call.request is not None:
                options = _registry_options(wire.choice_options(call.request.options, index))
                try:
                    completion = llm_client.complete(
                        workspace=call.workspace_id, role="proxy", messages=call.request.messages, tools=tools,
                        response_format=response_format, model=call.upstream.model, stream=relay,
                        fresh_context=True, actor_id="festinger:proxy", call_id=f"{call.call_id}-{index}", **options,
                        **call.thinking)
                except _Abandoned:
                    return
                put(StreamChunk(completion=completion))
                return
            messages = wire.to_messages(call.raw_messages, store_image=image_store(call.workspace_id))
            with span("festinger.proxy.call", workspace=call.workspace_id, actor_id="festinger:proxy",
                      call_id=call.call_id) as trace:
                trace.set(model=call.upstream.name, upstream=call.upstream.kind, target=call.upstream.target,
                          endpoint=kind)
                try:
                    completion = llm_client.complete(
                        workspace=call.workspace_id, role="proxy", messages=messages, tools=tools,
                        response_format=response_format, model=call.upstream.model, stream=relay,
                        **_registry_options(call.options), **call.thinking)
                except _Abandoned:
                    trace.set(cancelled=True)
                    return
                put(StreamChunk(completion=completion))
                trace.set(**{k: v for k, v in call.notes.items() if v is not None})
        except (LLMError, WireError) as exc:  # handed to the response, which answers it
            put(exc)
        except Exception:  # a fault of ours: its details (a database error's SQL) only in the log
            log.exception("festinger proxy: the registry call %s failed", call.call_id)
            put(WireError(500, "the model call failed (the proxy's log says why)"))


def _registry_thinking(name: str, upstream: Upstream, body: dict) -> dict:
    """The options that make a registry model think as Ollama's `think` asks; Ollama's 400 when its
    provider's models cannot think."""
    level = wire.think_level(body)
    if level is None:
        return {}
    options = thinking_options(upstream.model.provider, level)
    if options is None:
        raise wire.cannot_think(name)
    return options


def _registry_options(options: dict) -> dict:
    """Ollama's options under the names `complete` takes (those a registry model understands)."""
    return {_REGISTRY_OPTIONS[k]: v for k, v in options.items() if k in _REGISTRY_OPTIONS}
