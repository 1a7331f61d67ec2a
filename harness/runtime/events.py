"""The session event stream: numbered without gaps per session, published after commit."""

import json
import logging

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone

from fathom.redis_client import get_redis
from fathom.sql import statement_run
from harness.runtime import claims
from harness.runtime.models import Session, SessionEvent

logger = logging.getLogger(__name__)


EVENTS_WRITTEN = "EXISTS (SELECT 1 FROM numbered)"  # in events_emit's statement: its events are written


def channel_for(session_id) -> str:
    return f"fathom:harness:session:{session_id}:events"


@transaction.atomic(savepoint=False)
def event_emit(*, session_id, workspace_id, kind: str, data: dict | None = None, turn=None, turn_id=None,
               runner: str = "") -> SessionEvent:
    """Append an event. Its number is taken with an UPDATE of the session row, whose lock lasts
    until commit: events become visible in number order, so resuming after N never skips one.
    With `runner` (the session's claimant), that UPDATE is its heartbeat too: ClaimLost when
    another runner holds the session. `turn_id` instead of `turn` spares loading the turn."""
    with connection.cursor() as cursor:
        if runner:
            cursor.execute(
                "UPDATE harness_session SET last_event_seq = last_event_seq + 1, runner_heartbeat_at = %s "
                "WHERE id = %s AND runner = %s RETURNING last_event_seq",
                [timezone.now(), session_id, runner],
            )
        else:
            cursor.execute(
                "UPDATE harness_session SET last_event_seq = last_event_seq + 1 WHERE id = %s RETURNING last_event_seq",
                [session_id],
            )
        row = cursor.fetchone()
    if row is None:
        if runner and Session.objects.filter(pk=session_id).exists():
            raise claims.ClaimLost(f"Session {session_id} is no longer claimed by {runner}")
        raise Session.DoesNotExist(f"no session {session_id}")
    (seq,) = row
    event = SessionEvent.objects.create(
        workspace_id=workspace_id, session_id=session_id, seq=seq, kind=kind, data=data or {},
        turn_id=turn.pk if turn is not None else turn_id,
    )
    transaction.on_commit(lambda: _publish(session_id, seq))
    return event


def events_emit(*, session_id, workspace_id, events: list[tuple[str, dict]], turn_id=None, runner: str = "",
                alongside=(), release: bool = False, durable: bool = True) -> int:
    """Append several events (kind, data) at once, numbered in order under the session row's lock as
    event_emit numbers one, in one statement (the numbers' UPDATE and the rows' INSERT), published
    with one notice after commit. `runner` as for event_emit. `alongside`: other writes ((sql, params)
    each, INSERTs and UPDATEs that belong with the events: the quality run's copy of them, the rows its
    step made and changed) in the same statement, each conditional on EVENTS_WRITTEN, so that none is
    made without the events. `release` (with `runner`): the runner gives the session back with them.
    Not `durable`: outside a transaction, its commit does not wait for the WAL flush (fathom.sql.
    statement_run), for writes their maker makes again if a crash of the database forgets them (events a
    crash forgets have their numbers given again: a stream that read them skips those). Returns the
    last event's number."""
    heartbeat = ", runner = '', runner_heartbeat_at = NULL" if release else ", runner_heartbeat_at = %s" if runner else ""
    claimed = " AND runner = %s" if runner else ""
    extra = "".join(f", alongside{n} AS ({sql})" for n, (sql, _) in enumerate(alongside))
    with connection.cursor() as cursor:
        statement_run(
            cursor,
            f"WITH numbered AS (UPDATE harness_session SET last_event_seq = last_event_seq + %s{heartbeat} "
            f"WHERE id = %s{claimed} RETURNING last_event_seq){extra} "
            f"INSERT INTO harness_sessionevent (workspace_id, created_at, session_id, seq, kind, turn_id, data) "
            f"SELECT %s, %s, %s, numbered.last_event_seq - %s + item.n, item.kind, %s, item.data "
            f"FROM numbered, unnest(%s::varchar[], %s::jsonb[]) WITH ORDINALITY AS item(kind, data, n) "
            f"RETURNING seq",
            [len(events), *([timezone.now()] if runner and not release else []), session_id,
             *([runner] if runner else []),
             *[param for _, params in alongside for param in params],
             workspace_id, timezone.now(), session_id, len(events), turn_id,
             [kind for kind, _ in events], [json.dumps(data or {}, cls=DjangoJSONEncoder) for _, data in events]],
            durable=durable)
        numbers = [row[0] for row in cursor.fetchall()]
    if not numbers:
        if runner and Session.objects.filter(pk=session_id).exists():
            raise claims.ClaimLost(f"Session {session_id} is no longer claimed by {runner}")
        raise Session.DoesNotExist(f"no session {session_id}")
    last = max(numbers)
    transaction.on_commit(lambda: _publish(session_id, last))
    return last


def _publish(session_id, seq: int) -> None:
    # Readers also poll, so a lost notification only delays them; it must never fail the writer.
    try:
        get_redis().publish(channel_for(session_id), seq)
    except Exception:  # noqa: BLE001 - Redis down must not undo a committed event
        logger.warning("could not publish event %s of session %s", seq, session_id, exc_info=True)
