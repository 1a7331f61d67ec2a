"""How the quality harness speaks: every harness event is kept on its QualityRun (GET /v1/fires/{id}
shows them) and sent on the fire's session stream as `event: <name>`; and how what a fire waits for
hands it back: a tick of its session.

The events of one step (a pre-flight, an answer judged, a verdict decided) are written together with
the rows the step made and changed: inside `emitting(run)`, emit only collects the events, `created`
the new rows and `changed` the rows' fields, and the block's end writes them all in one statement (the
run's events and fields, the other rows, the session's numbers and rows) with one notice to the
stream; what must follow the write (a group sent to the quality worker) waits for it (`after_step`)."""

import json
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from fathom.celery import send_task_on_commit
from fathom.sql import insert_sql, statements_run, update_sql
from harness.fires.models import Fire
from harness.quality.models import QualityRun
from harness.runtime import claims
from harness.runtime.events import EVENTS_WRITTEN, events_emit
from harness.runtime.models import Session


@dataclass
class _Step:
    fire: Fire
    run: QualityRun
    events: list = field(default_factory=list)
    rows: dict = field(default_factory=dict)  # changed: (model, pk) -> (row, its fields)
    created: list = field(default_factory=list)
    then: list = field(default_factory=list)  # called once the step is written
    parking: bool = False


_STEP: ContextVar[_Step | None] = ContextVar("quality_step", default=None)


def emit(fire: Fire, run: QualityRun, name: str, data: dict, *, runner: bool = True) -> None:
    """A harness event: kept on the run (GET /v1/fires/{id} shows them) and sent on the fire's session
    stream as `event: <name>`. `runner`: the caller holds the fire's session (its heartbeat too)."""
    item = (name, {"fire_id": str(fire.pk), **data})
    step = _STEP.get()
    if step is not None and step.run.pk == run.pk and step.fire is fire:
        step.events.append(item)
        return
    _write(_Step(fire, run, [item]), runner=runner)


def changed(row, *fields: str) -> None:
    """Save the row's `fields` with the current step's events (inside `emitting`), else now."""
    if not fields:
        return
    step = _STEP.get()
    if step is None:
        row.save(update_fields=fields)
        return
    _changed_in(step, row, *fields)


def _changed_in(step: _Step, row, *fields: str) -> None:
    _, known = step.rows.setdefault((type(row), row.pk), (row, set()))
    known.update(fields)


def created(row) -> None:
    """Insert the new row (its primary key set: fathom.sql.ids_next_sql) with the current step's events
    (inside `emitting`), else now."""
    step = _STEP.get()
    if step is None:
        row.save(force_insert=True)
        return
    step.created.append(row)


def after_step(then: Callable[[], None]) -> None:
    """Call `then` once the current step is written (inside `emitting`), else now."""
    step = _STEP.get()
    if step is None:
        then()
        return
    step.then.append(then)


@contextmanager
def emitting(fire: Fire, run: QualityRun, *, runner: bool = True, parking: bool = False):
    """Collect the events emit makes, the rows `created` and the fields `changed` marks inside the block;
    write them at its end, in one statement (in the caller's transaction, if any: a block that raises
    writes nothing), then call what waits for it (`after_step`). `parking`: the fire's run ends after
    this step (it parks for the quality worker), and its claims on the fire and its session go back
    with the step's statement: what it waits for may tick it again at once."""
    step = _Step(fire, run, parking=parking)
    token = _STEP.set(step)
    try:
        yield
    finally:
        _STEP.reset(token)
    if step.events or step.rows or step.created:
        _write(step, runner=runner)
    for then in step.then:
        then()


def _write(step: _Step, *, runner: bool) -> None:
    fire, run = step.fire, step.run
    with_events = bool(fire.session_id and step.events)  # then every write is made only with them
    where = EVENTS_WRITTEN if with_events else ""
    parking = step.parking and with_events and runner
    if parking:
        fire.runner, fire.runner_heartbeat_at = "", None
        _changed_in(step, fire, "runner", "runner_heartbeat_at")
    at = timezone.now().isoformat()
    kept = [{"event": name, "at": at, "data": data} for name, data in step.events]
    run_created = any(row is run for row in step.created)
    if run_created:
        run.events = [*run.events, *kept]
    writes = [insert_sql(row, tail=f"WHERE {where}" if where else "") for row in step.created]
    run_fields = step.rows.get((QualityRun, run.pk), (run, ()))[1]
    if not run_created and (run_fields or kept):
        appended = {"events": ("events || %s::jsonb", [_json(kept)])} if kept else {}
        writes.append(update_sql(run, run_fields, expressions=appended, where=where))
    writes += [update_sql(row, fields, where=where) for row, fields in step.rows.values()
               if row is not run and row not in step.created]
    if with_events:
        events_emit(session_id=fire.session_id, workspace_id=fire.workspace_id, events=step.events,
                    turn_id=fire.turn_id, runner=claims.runner_id() if runner else "", alongside=writes,
                    release=parking)
    elif writes:
        statements_run(writes)
    if parking:
        claims.handed_over(Fire, fire.pk)
        claims.handed_over(Session, fire.session_id)
    for row in step.created:
        row._state.adding, row._state.db = False, connection.alias


def fire_resume(*, session_id, workspace_id, fire_id) -> None:
    """Tick the fire's session once the current transaction commits, the way back into a parked fire
    (harness.fires.services.fire_parked_resume): its turn resumes the fire."""
    send_task_on_commit("fires.fire_parked_resume", args=[str(session_id), workspace_id, str(fire_id)])


def _json(value) -> str:
    return json.dumps(value, default=str)
