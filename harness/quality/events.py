"""How the quality harness speaks: every harness event is kept on its QualityRun (GET /v1/fires/{id}
shows them) and sent on the fire's session stream as `event: <name>`; and how what a fire waits for
hands it back: a tick of its session.

The events of one step (a pre-flight, a verdict, an acceptance) are written together: inside
`emitting(run)`, emit only collects them, and the block's end writes them all in three statements
(the run's list, the session's numbers, the session's rows) with one notice to the stream."""

import json
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import connection
from django.utils import timezone

from fathom.celery import send_task_on_commit
from harness.fires.models import Fire
from harness.quality.models import QualityRun
from harness.runtime import claims
from harness.runtime.events import events_emit

_BATCH: ContextVar[tuple | None] = ContextVar("quality_events_batch", default=None)


def emit(fire: Fire, run: QualityRun, name: str, data: dict, *, runner: bool = True) -> None:
    """A harness event: kept on the run (GET /v1/fires/{id} shows them) and sent on the fire's session
    stream as `event: <name>`. `runner`: the caller holds the fire's session (its heartbeat too)."""
    item = (name, {"fire_id": str(fire.pk), **data})
    batch = _BATCH.get()
    if batch is not None and batch[0] == run.pk and batch[1] is fire:
        batch[2].append(item)
        return
    _write(fire, run, [item], runner=runner)


@contextmanager
def emitting(fire: Fire, run: QualityRun, *, runner: bool = True):
    """Collect the events emit makes for this run inside the block; write them at its end (in the
    caller's transaction: a block that raises writes nothing)."""
    items: list = []
    token = _BATCH.set((run.pk, fire, items))
    try:
        yield
    finally:
        _BATCH.reset(token)
    if items:
        _write(fire, run, items, runner=runner)


def _write(fire: Fire, run: QualityRun, items: list, *, runner: bool) -> None:
    at = timezone.now().isoformat()
    kept = ("UPDATE harness_qualityrun SET events = events || %s::jsonb WHERE id = %s",
            [_json([{"event": name, "at": at, "data": data} for name, data in items]), run.pk])
    if fire.session_id:  # the run's copy and the session's events in one statement
        events_emit(session_id=fire.session_id, workspace_id=fire.workspace_id, events=items, turn_id=fire.turn_id,
                    runner=claims.runner_id() if runner else "", alongside=kept)
    else:
        with connection.cursor() as cursor:
            cursor.execute(*kept)


def fire_resume(fire: Fire) -> None:
    """Tick the fire's session once the current transaction commits: its turn resumes the fire."""
    session_id = fire.session_id
    send_task_on_commit("fires.session_tick", args=[str(session_id)])


def _json(value) -> str:
    return json.dumps(value, default=str)
