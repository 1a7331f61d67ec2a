"""Reads of the loop detector's record, and of the state it holds now per conversation."""

import logging

from django.db.models import Count, Max, Q
from redis.exceptions import RedisError

from festinger.loops.guard import LoopState, loop_states
from festinger.loops.models import DETECTIONS, MITIGATIONS, LoopEvent

log = logging.getLogger(__name__)


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


def loop_conversations(*, workspace, since, limit: int) -> list[dict]:
    """The conversations with a loop event since `since`, the latest active first (one query, one Redis
    round trip): each as {session, last_at, events, detections, mitigations, state}, where `state` is
    its LoopState now (None when Redis cannot be reached)."""
    rows = list(loop_events_list(workspace=workspace, since=since).order_by().values("session").annotate(
        last_at=Max("created_at"), events=Count("id"), detections=Count("id", filter=Q(kind__in=DETECTIONS)),
        mitigations=Count("id", filter=Q(kind__in=MITIGATIONS))).order_by("-last_at")[:limit])
    states = loop_states_or_none(workspace=workspace, sessions=[row["session"] for row in rows])
    return [{**row, "state": states.get(row["session"])} for row in rows]


def loop_states_or_none(*, workspace, sessions) -> dict[str, LoopState]:
    """`loop_states`, or {} when Redis cannot be reached (a page that shows them still renders)."""
    try:
        return loop_states(workspace_id=workspace.pk, sessions=sessions)
    except RedisError:
        log.warning("festinger: Redis is unreachable; loop states of workspace %s unknown", workspace.pk,
                    exc_info=True)
        return {}
