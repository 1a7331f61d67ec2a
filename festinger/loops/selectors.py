"""Reads of the loop detector's record."""

from festinger.loops.models import LoopEvent


def loop_events_list(*, workspace, session: str | None = None, kind: str | None = None, since=None):
    """The workspace's detections and mitigations, newest first."""
    rows = LoopEvent.objects.filter(workspace=workspace)
    if session:
        rows = rows.filter(session=session)
    if kind:
        rows = rows.filter(kind=kind)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    return rows.order_by("-created_at", "-id")
