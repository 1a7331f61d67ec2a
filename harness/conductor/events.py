"""A run's event stream: numbered 1, 2, 3... per run without gaps, in commit order, published after
commit (read back like a session's, over SSE or JSON)."""

import logging

from django.db import connection, transaction

from fathom.redis_client import get_redis
from harness.conductor.models import Run, RunEvent

logger = logging.getLogger(__name__)


def run_channel(run_id) -> str:
    return f"fathom:harness:run:{run_id}:events"


def run_event_emit(run: Run, kind: str, data: dict) -> RunEvent:
    return run_events_emit(run, [(kind, data)])[0]


def run_events_emit(run: Run, entries: list[tuple[str, dict]]) -> list[RunEvent]:
    """Append run events, numbered under the run row's lock (one UPDATE ... RETURNING for all of
    them, the lock held until commit), published after commit."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE harness_run SET last_event_seq = last_event_seq + %s WHERE id = %s "
                       "RETURNING last_event_seq", [len(entries), run.pk])
        (last,) = cursor.fetchone()
    run.last_event_seq = last
    first = last - len(entries) + 1
    events = RunEvent.objects.bulk_create(
        RunEvent(workspace_id=run.workspace_id, run_id=run.pk, seq=first + n, kind=kind, data=data)
        for n, (kind, data) in enumerate(entries))
    run_id = run.pk
    transaction.on_commit(lambda: _publish(run_id, last))
    return events


def _publish(run_id, seq: int) -> None:
    try:
        get_redis().publish(run_channel(run_id), seq)
    except Exception:  # noqa: BLE001 - readers poll too; Redis down must not undo a committed event
        logger.warning("could not publish event %s of run %s", seq, run_id, exc_info=True)
