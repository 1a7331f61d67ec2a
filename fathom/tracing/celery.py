"""Traces across Celery: a task enqueued inside a span carries the trace's ids in a message header;
the worker opens a `celery.task` span under that parent, so everything the task does joins the
trace. Every task (traced or not) is a tracing scope: its events are written in bulk when it ends,
failed or not."""

from celery import signals

from fathom.tracing import otel
from fathom.tracing.spans import (
    SpanContext,
    activate,
    close_scope,
    current_span,
    open_scope,
    start_span,
)

HEADER = "fathom_trace"
# Open scopes and spans by task id: pre- and post-run signals run in the same worker thread.
_running: dict[str, tuple] = {}


def connect() -> None:
    signals.before_task_publish.connect(_inject, weak=False, dispatch_uid="fathom.tracing.inject")
    signals.task_prerun.connect(_task_started, weak=False, dispatch_uid="fathom.tracing.prerun")
    signals.task_postrun.connect(_task_ended, weak=False, dispatch_uid="fathom.tracing.postrun")
    signals.worker_process_shutdown.connect(_process_ending, weak=False, dispatch_uid="fathom.tracing.otel")


def _inject(headers=None, **_kwargs):
    parent = current_span()
    if parent is not None and headers is not None and HEADER not in headers:
        headers[HEADER] = {"trace_id": parent.trace_id, "span_id": parent.span_id,
                           "workspace_id": parent.workspace_id, "run_id": parent.run_id,
                           "actor_id": parent.actor_id}


def _task_started(task_id=None, task=None, **_kwargs):
    handle = open_scope(task_id=task_id or "")
    parent = SpanContext.from_headers(_header(task))
    opened = None
    if parent is not None:
        opened = start_span("celery.task", parent=parent, task_id=task_id, task=task.name)
        activate(handle, opened)
    _running[task_id] = (handle, opened)


def _task_ended(task_id=None, state=None, retval=None, **_kwargs):
    handle, opened = _running.pop(task_id, (None, None))
    if opened is not None:
        opened.set(state=state)
        opened.end(error=retval if isinstance(retval, BaseException) else None)
    if handle is not None:
        close_scope(handle)


def _process_ending(**_kwargs):
    otel.shutdown()  # a pool process may exit without atexit: send the spans still queued


def _header(task):
    request = task.request
    value = getattr(request, HEADER, None)
    if value is None:
        value = (getattr(request, "headers", None) or {}).get(HEADER)
    return value
