"""Reads of the runtime, always scoped by workspace."""

import uuid

from fathom.errors import NotFoundError
from harness.runtime.models import Session, SessionEvent, Trigger


def session_get(*, workspace, session_id) -> Session:
    try:
        pk = uuid.UUID(str(session_id))
    except ValueError:
        pk = None
    session = Session.objects.filter(workspace=workspace, pk=pk).first() if pk else None
    if session is None:
        raise NotFoundError(f"no session {session_id} in this workspace")
    return session


def sessions_list(*, workspace):
    return Session.objects.filter(workspace=workspace)


def session_events_after(*, session_id, after: int = 0, limit: int = 200) -> list[SessionEvent]:
    """Events numbered above `after`, oldest first (the caller already checked the workspace)."""
    return list(SessionEvent.objects.filter(session_id=session_id, seq__gt=after).order_by("seq")[:limit])


def session_messages(*, session: Session):
    return Trigger.objects.filter(session=session, kind=Trigger.Kind.USER_MESSAGE).order_by("created_at", "id")
