"""Spans: the one tracing helper.

    from fathom.tracing import span

    with span("trace.prompt", workspace=ws, actor_id="session:42", run_id=fire_id) as root:
        ...
        with span("worker.tool", call_id=call.id, tool=call.name, arguments=call.arguments) as tool:
            result = run(call)
            tool.set(result=summary(result))

A span writes an event when it starts and one when it ends (`completed`, or `failed` with the error
when the code inside raised; the exception still propagates). Ids live in context variables: a
span opened inside another is its child, inherits its trace id, workspace, run, task and actor
(each overridable), and Celery tasks enqueued inside it continue the trace in the worker.

Events are buffered, not written one by one: the buffer is flushed in one bulk INSERT at the end of
the HTTP request (TracingMiddleware), of the Celery task (signals), or else of the outermost span;
and whenever it holds FLUSH_AT events. The flush happens in `finally`, so a raising body loses
nothing.

Span names with their own event words: `trace.prompt` (received / completed / failed), `llm.call`
(started / completed / failed), `worker.tool` (call / result). Any other name N gets N.started /
N.completed / N.failed. The event names themselves are accepted as span names too
(`span("worker.tool.call", ...)` is `span("worker.tool", ...)`)."""

from __future__ import annotations

import logging
import secrets
import time
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from fathom.tracing import otel
from fathom.tracing.names import ALIASES, words
from fathom.tracing.writer import write_events

logger = logging.getLogger(__name__)

FLUSH_AT = 500
ERROR_MAX_CHARS = 2000

# Span attributes stored in their own columns rather than in the payload.
COLUMNS = ("model", "provider", "input_tokens", "output_tokens", "cached_tokens", "cost")


class Span:
    """An open span. `set(**attrs)` adds to what its end event records; `usage(...)` sets the model
    columns (model, provider, tokens, cost) that accounting sums."""

    __slots__ = ("name", "trace_id", "span_id", "parent_span_id", "workspace_id", "run_id", "task_id", "call_id",
                 "actor_id", "attrs", "columns", "_started", "_buffer", "_owns_buffer", "ended", "status", "error")

    def __init__(self, name, *, trace_id, span_id, parent_span_id, workspace_id, run_id, task_id, call_id,
                 actor_id, buffer, owns_buffer):
        self.name = name
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_span_id = parent_span_id
        self.workspace_id = workspace_id
        self.run_id = run_id
        self.task_id = task_id
        self.call_id = call_id
        self.actor_id = actor_id
        self.attrs: dict[str, Any] = {}
        self.columns: dict[str, Any] = {}
        self._started = time.perf_counter()
        self._buffer = buffer
        self._owns_buffer = owns_buffer
        self.ended = False
        self.status = ""
        self.error = ""

    def set(self, **attrs) -> Span:
        for key, value in attrs.items():
            (self.columns if key in COLUMNS else self.attrs)[key] = value
        return self

    def event(self, kind: str, **payload) -> None:
        """A point event inside this span (e.g. `llm.call.retry`)."""
        self._buffer.add(self, kind, payload=payload)

    def end(self, error: BaseException | str | None = None) -> None:
        """Write the end event; idempotent. Flushes when this span opened its own buffer."""
        if self.ended:
            return
        self.ended = True
        _, completed, failed = words(self.name)
        if error is not None:
            self.status = "error"
            self.error = describe(error)[:ERROR_MAX_CHARS]
        else:
            self.status = "ok"
        duration_ms = (time.perf_counter() - self._started) * 1000
        self._buffer.add(self, failed if error is not None else completed, payload=self.attrs,
                         duration_ms=duration_ms, final=True)
        if self._owns_buffer:
            self._buffer.flush()

    def leave_open(self) -> None:
        """Write no end event: the span stays running in the trace, for work that another attempt
        carries on and ends (as `services.spans_end` ends what a dead process left open)."""
        self.ended = True

    @property
    def duration_ms(self) -> float:
        return (time.perf_counter() - self._started) * 1000

    def headers(self) -> dict:
        """The ids a Celery message (or an outgoing request) carries to continue this trace."""
        return {"trace_id": self.trace_id, "span_id": self.span_id, "workspace_id": self.workspace_id,
                "run_id": self.run_id, "actor_id": self.actor_id}


@contextmanager
def span(name: str, *, workspace=None, actor_id: str | None = None, run_id: str | None = None,
         task_id: str | None = None, call_id: str | None = None, **attrs):
    """Open a span for the block; see the module docstring."""
    opened_buffer = _buffer.get() is None
    buffer_token = _buffer.set(Buffer()) if opened_buffer else None
    current = start_span(name, workspace=workspace, actor_id=actor_id, run_id=run_id, task_id=task_id,
                         call_id=call_id, **attrs)
    token = _current.set(current)
    try:
        yield current
    except BaseException as exc:
        current.end(error=exc)
        raise
    else:
        current.end()
    finally:
        _current.reset(token)
        if opened_buffer:
            buffer = _buffer.get()
            _buffer.reset(buffer_token)
            buffer.flush()


def start_span(name: str, *, workspace=None, actor_id=None, run_id=None, task_id=None, call_id=None,
               parent: Span | SpanContext | None = None, **attrs) -> Span:
    """Open a span without making it current (for generators and callbacks that end it later with
    `.end()`). Its parent is `parent`, or the current span."""
    name = ALIASES.get(name, name)
    parent = parent if parent is not None else _current.get()
    workspace_id = getattr(workspace, "pk", workspace)
    if parent is not None:
        workspace_id = workspace_id if workspace_id is not None else parent.workspace_id
        trace_id, parent_span_id = parent.trace_id, parent.span_id
        run_id = run_id if run_id is not None else parent.run_id
        task_id = task_id if task_id is not None else parent.task_id
        actor_id = actor_id if actor_id is not None else parent.actor_id
    else:
        trace_id, parent_span_id = new_trace_id(), ""
        task_id = task_id if task_id is not None else _task_id.get()
    if workspace_id is None:
        raise ValueError(f"span {name!r} needs a workspace: pass workspace= or open it inside a span that has one")
    buffer = _buffer.get()
    owns_buffer = buffer is None
    if owns_buffer:
        buffer = Buffer()
    opened = Span(name, trace_id=trace_id, span_id=new_span_id(), parent_span_id=parent_span_id,
                  workspace_id=workspace_id, run_id=run_id or "", task_id=task_id or "", call_id=call_id or "",
                  actor_id=actor_id or "", buffer=buffer, owns_buffer=owns_buffer)
    opened.set(**attrs)
    buffer.add(opened, words(name)[0], payload=dict(opened.attrs))
    return opened


def event(kind: str, **payload) -> None:
    """A point event in the current span; ignored (with a debug log) outside any span."""
    current = _current.get()
    if current is None or not isinstance(current, Span):
        logger.debug("trace event %s outside any span dropped", kind)
        return
    current.event(kind, **payload)


def end_of(start, *, error: str = "") -> None:
    """End a span known only by its start event (a TraceEvent an earlier run wrote) with the events
    buffered now, failed with `error` or completed: written at their flush (at once outside any scope)."""
    buffer = _buffer.get()
    if buffer is None:
        buffer = Buffer()
        buffer.add_end_of(start, error=error)
        buffer.flush()
        return
    buffer.add_end_of(start, error=error)


def current_span() -> Span | SpanContext | None:
    return _current.get()


def flush() -> None:
    """Write the events buffered so far now rather than at the end of the scope: work that commits
    as it goes (a fire's journal) keeps its trace when its process dies before the scope ends."""
    buffer = _buffer.get()
    if buffer is not None:
        buffer.flush()


class SpanContext:
    """A parent that lives elsewhere (another process): the ids a Celery message carried."""

    __slots__ = ("trace_id", "span_id", "workspace_id", "run_id", "task_id", "actor_id")

    def __init__(self, *, trace_id, span_id, workspace_id, run_id="", task_id="", actor_id=""):
        self.trace_id = trace_id
        self.span_id = span_id
        self.workspace_id = workspace_id
        self.run_id = run_id or ""
        self.task_id = task_id or ""
        self.actor_id = actor_id or ""

    @classmethod
    def from_headers(cls, data: dict | None) -> SpanContext | None:
        if not data or not data.get("trace_id") or data.get("workspace_id") is None:
            return None
        return cls(trace_id=str(data["trace_id"]), span_id=str(data.get("span_id") or ""),
                   workspace_id=data["workspace_id"], run_id=data.get("run_id") or "",
                   actor_id=data.get("actor_id") or "")


@contextmanager
def continue_trace(parent: SpanContext | None):
    """Make a remote parent current for the block, so spans opened in it join that trace."""
    if parent is None:
        yield None
        return
    token = _current.set(parent)
    try:
        yield parent
    finally:
        _current.reset(token)


@contextmanager
def scope():
    """Buffer every event of the block and write them in bulk at its end (used around a request and
    a task). Nested scopes share the outer one."""
    if _buffer.get() is not None:
        yield _buffer.get()
        return
    buffer = Buffer()
    token = _buffer.set(buffer)
    try:
        yield buffer
    finally:
        _buffer.reset(token)
        buffer.flush()


def open_scope(*, task_id: str = ""):
    """The two halves of `scope()` for hooks that cannot wrap a block (Celery's pre/post signals).
    Spans opened until `close_scope(handle)` carry `task_id`; `activate(span)` makes a span current
    until then."""
    buffer = Buffer()
    return {"buffer": buffer, "tokens": [(_buffer, _buffer.set(buffer)), (_task_id, _task_id.set(task_id))]}


def activate(handle, opened: Span) -> None:
    handle["tokens"].append((_current, _current.set(opened)))


def close_scope(handle) -> None:
    for var, token in reversed(handle["tokens"]):
        try:
            var.reset(token)
        except ValueError:  # reset from another context: clear it instead
            var.set(None if var is not _task_id else "")
    handle["buffer"].flush()


def new_trace_id() -> str:
    return secrets.token_hex(16)


def new_span_id() -> str:
    return secrets.token_hex(8)


def describe(error: BaseException | str) -> str:
    if isinstance(error, str):
        return error
    return f"{type(error).__name__}: {error}"


class Buffer:
    """Events waiting to be written: plain tuples until the flush builds rows."""

    __slots__ = ("events",)

    def __init__(self):
        self.events: list[tuple] = []

    def add(self, owner: Span, kind: str, *, payload: dict, duration_ms: float | None = None,
            final: bool = False) -> None:
        self.events.append((datetime.now(UTC), kind, owner, dict(payload), duration_ms, dict(owner.columns),
                            owner.status if final else "", owner.error if final else ""))
        if len(self.events) >= FLUSH_AT:
            self.flush()

    def add_end_of(self, start, *, error: str = "") -> None:
        """The end event of a span known only by its start event (a TraceEvent another process wrote):
        failed with `error`, or completed when it is empty, now, timed from the start."""
        at = datetime.now(UTC)
        _, completed, failed = words(start.name)
        self.events.append((at, failed if error else completed, start, {}, (at - start.at).total_seconds() * 1000,
                            {}, "error" if error else "ok", error))

    def flush(self) -> int:
        if not self.events:
            return 0
        events, self.events = self.events, []
        written = write_events(events)
        try:
            otel.export(events)
        except Exception:  # noqa: BLE001 - like a failed write: the trace suffers, never the traced work
            logger.warning("exporting %d trace events over OTLP failed", len(events), exc_info=True)
        return written


_current: ContextVar[Span | SpanContext | None] = ContextVar("fathom_trace_span", default=None)
_buffer: ContextVar[Buffer | None] = ContextVar("fathom_trace_buffer", default=None)
_task_id: ContextVar[str] = ContextVar("fathom_trace_task_id", default="")
