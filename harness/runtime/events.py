"""The session event stream: numbered without gaps per session, published after commit."""

import logging

from django.db import connection, transaction
from django.utils import timezone

from fathom.redis_client import get_redis
from harness.runtime import claims
from harness.runtime.models import Session, SessionEvent

logger = logging.getLogger(__name__)


def channel_for(session_id) -> str:
    return f"fathom:harness:session:{session_id}:events"


@transaction.atomic(savepoint=False)
def event_emit(*, session_id, workspace_id, kind: str, data: dict | None = None, turn=None,
               runner: str = "") -> SessionEvent:
    """Append an event. Its number is taken with an UPDATE of the session row, whose lock lasts
    until commit: events become visible in number order, so resuming after N never skips one.
    With `runner` (the session's claimant), that UPDATE is its heartbeat too: ClaimLost when
    another runner holds the session."""
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
        workspace_id=workspace_id, session_id=session_id, seq=seq, kind=kind, data=data or {}, turn=turn
    )
    transaction.on_commit(lambda: _publish(session_id, seq))
    return event


def _publish(session_id, seq: int) -> None:
    # Readers also poll, so a lost notification only delays them; it must never fail the writer.
    try:
        get_redis().publish(channel_for(session_id), seq)
    except Exception:  # noqa: BLE001 - Redis down must not undo a committed event
        logger.warning("could not publish event %s of session %s", seq, session_id, exc_info=True)
