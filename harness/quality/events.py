"""How the quality harness speaks: every harness event is kept on its QualityRun (GET /v1/fires/{id}
shows them) and sent on the fire's session stream as `event: <name>`; and how what a fire waits for
hands it back: a tick of its session.

The events of one step (a pre-flight, an answer judged, a verdict decided) are written together with
the rows the step made and changed: inside `emitting(fire, run) as step`, `step.emit` collects the
events, `step.create` the new rows and `step.changed` the rows' fields, and the block's end writes them
all in one statement (fathom.sql: the run's events and fields, the other rows, the session's numbers
and rows) with one notice to the stream; what must follow the write (a group sent to the quality
worker) waits for it (`step.after`). One statement rather than the ORM's save of each row: written
row by row, a fire's steps cost 63 statements (tests/harness/quality/test_overhead.py pins the count
and tells its history), more than the 15 ms a fire the harness may add (tests/bench/bench_quality.py)."""

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.utils import timezone

from fathom import outbox
from fathom.sql import insert_sql, statements_run, update_sql
from harness.fires.models import Fire
from harness.quality.models import QualityRun
from harness.runtime import claims
from harness.runtime.events import EVENTS_WRITTEN, events_emit
from harness.runtime.models import Session


class Step:
    """The writes of one step of the harness (a pre-flight, an answer judged, a verdict decided), made
    inside `emitting`: the events it emits, the rows it creates and the fields it changes, written
    together at the block's end; what must follow the write (a group sent to the quality worker) is
    called after it."""

    def __init__(self, fire: Fire, run: QualityRun, *, runner: bool = True, parking: bool = False,
                 durable: bool = True):
        self.fire, self.run, self.runner, self.parking, self.durable = fire, run, runner, parking, durable
        self.events: list[tuple[str, dict]] = []
        self.rows: dict = {}  # changed: (model, pk) -> (row, its fields)
        self.created: list = []
        self.then: list[Callable[[], None]] = []

    def emit(self, name: str, data: dict) -> None:
        """A harness event: kept on the run (GET /v1/fires/{id} shows them) and sent on the fire's
        session stream as `event: <name>`."""
        self.events.append((name, {"fire_id": str(self.fire.pk), **data}))

    def changed(self, row, *fields: str) -> None:
        """Save the row's `fields` with the step."""
        _, known = self.rows.setdefault((type(row), row.pk), (row, set()))
        known.update(fields)

    def create(self, row) -> None:
        """Insert the new row (its primary key set: fathom.sql.ids_next_sql) with the step."""
        self.created.append(row)

    def after(self, then: Callable[[], None]) -> None:
        """Call `then` once the step is written."""
        self.then.append(then)


@contextmanager
def emitting(fire: Fire, run: QualityRun, *, runner: bool = True, parking: bool = False,
             durable: bool = True) -> Iterator[Step]:
    """A Step whose writes are made at the block's end, in one statement (in the caller's transaction,
    if any: a block that raises writes nothing), then what waits for them. `runner`: the caller holds
    the fire's session (its heartbeat too). `parking`: the fire's run ends after this step (it parks
    for the quality worker), and its claims on the fire and its session go back with the step's
    statement: what it waits for may tick it again at once. Not `durable`: outside a transaction, the
    statement's commit does not wait for the WAL flush (fathom.sql.statement_run)."""
    step = Step(fire, run, runner=runner, parking=parking, durable=durable)
    yield step
    if step.events or step.rows or step.created:
        _write(step)
    for then in step.then:
        then()


def emit(fire: Fire, run: QualityRun, name: str, data: dict, *, runner: bool = True) -> None:
    """One harness event, written at once (a step of its own)."""
    with emitting(fire, run, runner=runner) as step:
        step.emit(name, data)


def _write(step: Step) -> None:
    fire, run = step.fire, step.run
    with_events = bool(fire.session_id and step.events)  # then every write is made only with them
    where = EVENTS_WRITTEN if with_events else ""
    parking = step.parking and with_events and step.runner
    if parking:
        fire.runner, fire.runner_heartbeat_at = "", None
        step.changed(fire, "runner", "runner_heartbeat_at")
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
                    turn_id=fire.turn_id, runner=claims.runner_id() if step.runner else "", alongside=writes,
                    release=parking, durable=step.durable)
    elif writes:
        statements_run(writes, durable=step.durable)
    if parking:
        claims.handed_over(Fire, fire.pk)
        claims.handed_over(Session, fire.session_id)


def fire_resume(*, session_id, workspace_id, fire_id) -> None:
    """Tick the fire's session once the current transaction commits, the way back into a parked fire
    (harness.fires.services.fire_parked_resume): its turn resumes the fire."""
    outbox.enqueue("fires.fire_parked_resume", args=[str(session_id), workspace_id, str(fire_id)], swept=True)


def _json(value) -> str:
    return json.dumps(value, default=str)
