"""The session event stream: numbered without gaps per session, published after commit."""

import logging

from django.db import connection, transaction

from fathom.redis_client import get_redis
from harness.runtime.models import Session, SessionEvent

logger = logging.getLogger(__name__)


def channel_for(session_id) -> str:
    return f"fathom:harness:session:{session_id}:events"


@transaction.atomic(savepoint=False)
def event_emit(*, session_id, workspace_id, kind: str, data: dict | None = None, turn=None) -> SessionEvent:
    """Append an event. Its number is taken with an UPDATE of the session row, whose lock lasts
    until commit: events become visible in number order, so resuming after N never skips one."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE harness_session SET last_event_seq = last_event_seq + 1 WHERE id = %s RETURNING last_event_seq",
            [session_id],
        )
        row = cursor.fetchone()
    if row is None:
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
