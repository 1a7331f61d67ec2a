"""A task enqueued inside a span continues the trace in a real worker."""

import time

import pytest

from fathom.tasks import ping
from fathom.tracing import span
from fathom.tracing.models import TraceEvent


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.mark.worker
def test_a_task_enqueued_inside_a_span_continues_the_trace_in_the_worker(transactional_db, workspace, celery_worker):
    with span("trace.prompt", workspace=workspace, actor_id="session:7", run_id="run-7") as root:
        result = ping.delay("traced")
    assert result.get(timeout=20)["token"] == "traced"

    rows = wait_for(lambda: list(TraceEvent.objects.filter(trace_id=root.trace_id, name="celery.task")
                                 .order_by("at")) if TraceEvent.objects.filter(
        trace_id=root.trace_id, kind="celery.task.completed").exists() else None)
    started, completed = rows
    assert started.kind == "celery.task.started" and completed.kind == "celery.task.completed"
    assert started.parent_span_id == root.span_id and started.workspace_id == workspace.pk
    assert started.task_id == result.id and started.run_id == "run-7" and started.actor_id == "session:7"
    assert started.payload["task"] == "platform.ping" and completed.status == "ok"
