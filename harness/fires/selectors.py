"""Reads of fires, always scoped by workspace."""

import re

from django.db import models
from django.db.models.fields.json import KT

from fathom.selectors import workspace_row_get
from fathom.tracing.models import TraceEvent
from harness.fires import hooks
from harness.fires.models import Fire, FireToolCall
from harness.runtime.models import Session, Trigger
from lake.models import ID_LENGTH, Delta

TRACE_FIELDS = ["at", "kind", "name", "status", "span_id", "parent_span_id", "call_id", "actor_id", "duration_ms",
                "model", "provider", "input_tokens", "output_tokens", "cost", "error"]
TRACE_LIMIT = 2000
DELTA_ID = re.compile(rf"\b[0-9a-f]{{{ID_LENGTH}}}\b")


def fire_get(*, workspace, fire_id) -> Fire:
    return workspace_row_get(Fire, workspace=workspace, pk=fire_id, noun="fire")


def fires_list(*, workspace, session: Session | None = None):
    fires = Fire.objects.filter(workspace=workspace)
    return fires.filter(session=session) if session is not None else fires


def fire_of_message(*, workspace, trigger_id) -> Fire | None:
    """The fire answering a user message (of the session turn that took it), once a turn has taken it."""
    turn_id = Trigger.objects.filter(workspace=workspace, pk=trigger_id).values_list("turn_id", flat=True).first()
    return Fire.objects.filter(workspace=workspace, turn_id=turn_id, depth=0).first() if turn_id else None


def fire_with_journal(*, fire: Fire) -> Fire:
    """The fire with its turns, their tool calls, its children and what its lifecycle hooks show of it
    (the quality harness's record with its attempts), read in four queries and the hooks' lookups."""
    return Fire.objects.prefetch_related("turns__calls", "children", *hooks.output_prefetch()).get(pk=fire.pk)


def fire_returned_ids(*, fire: Fire) -> set[str]:
    """Every delta id that appears in a result of the fire's tools (candidates: the lake says which
    exist), the respond aside: what the fire was shown, so what it may name."""
    found = set()
    for result in (FireToolCall.objects.filter(fire=fire, ok=True).exclude(name="respond")
                   .values_list("result", flat=True)):
        found.update(DELTA_ID.findall(result))
    return found


def fire_in_shared_trace(fire: Fire) -> bool:
    """Whether the fire runs inside another's trace, so that only its own run's events (run_id = its id)
    are its: a spawned fire (`spawned_by`: a parent fire's tool call or subtask, a conductor run's
    capability call) opens its spans under its spawner's; a fire nobody spawned starts a trace of its own."""
    return bool(fire.spawned_by)


def fire_trace(*, fire: Fire) -> list[dict]:
    """The fire's trace events (model calls, tool calls, its child fires), oldest first; of a fire that runs
    inside another's trace (fire_in_shared_trace), its own run's events only."""
    if not fire.trace_id:
        return []
    return list(_trace_events(fire).order_by("at", "id").values(*TRACE_FIELDS)[:TRACE_LIMIT])


def fire_calls_by_role(*, fire: Fire) -> dict[str, dict]:
    """{role: {calls, input_tokens, output_tokens, cost}} of every model call that ended in the fire's
    trace (classifier, planner, main, review, verifier, judge, writer, ...: each call counted under
    the role it was made for), in one query; {} before the fire has a trace. Of a fire that runs inside
    another's trace, its own run's calls only (as fire_trace)."""
    if not fire.trace_id:
        return {}
    rows = (_trace_events(fire).filter(name="llm.call")
            .exclude(status="").values(role=KT("payload__role"))
            .annotate(calls=models.Count("id"), input_tokens=models.Sum("input_tokens"),
                      output_tokens=models.Sum("output_tokens"), cost=models.Sum("cost")).order_by("role"))
    return {row["role"] or "": {"calls": row["calls"], "input_tokens": row["input_tokens"],
                                "output_tokens": row["output_tokens"], "cost": float(row["cost"])} for row in rows}


def _trace_events(fire: Fire):
    events = TraceEvent.objects.filter(workspace_id=fire.workspace_id, trace_id=fire.trace_id)
    return events.filter(run_id=str(fire.pk)) if fire_in_shared_trace(fire) else events


# --- The operator dashboard's reads (dashboard) -----------------------------------------------

def fires_top_level(*, workspace, modes=None, statuses=None, search: str = ""):
    """The workspace's top-level fires (the feed's): with `modes` or `statuses` (lists; None: any) only
    those in them, with `search` only those whose question or answer contains it (any case)."""
    fires = Fire.objects.filter(workspace=workspace, depth=0)
    if modes is not None:
        fires = fires.filter(mode__in=modes)
    if statuses is not None:
        fires = fires.filter(status__in=statuses)
    if search:
        fires = fires.filter(models.Q(question__icontains=search) | models.Q(response__body__icontains=search))
    return fires


def fires_feed_page(*, workspace, before=None, limit: int, modes=None, statuses=None, search: str = "") -> list[Fire]:
    """A page of the workspace's top-level fires (those `fires_top_level` matches), newest first, created
    before `before` (a datetime; None: the newest), each with its turns and their tool calls: three
    queries whatever the page size."""
    fires = fires_top_level(workspace=workspace, modes=modes, statuses=statuses, search=search)
    if before is not None:
        fires = fires.filter(created_at__lt=before)
    return list(fires.order_by("-created_at", "-id").prefetch_related("turns__calls")[:limit])


def fires_progress(*, workspace, limit: int, modes=None, statuses=None, search: str = "") -> list[tuple]:
    """(id, created at, status, phase, model calls, turns recorded) of the workspace's newest top-level
    fires (those `fires_top_level` matches), one query: what the dashboard's live feed compares to notice
    a new fire or one that moved on."""
    return list(fires_top_level(workspace=workspace, modes=modes, statuses=statuses, search=search)
                .order_by("-created_at", "-id")
                .annotate(turns_recorded=models.Count("turns"))
                .values_list("id", "created_at", "status", "phase", "model_calls", "turns_recorded")[:limit])


def fire_with_journal_get(*, workspace, fire_id) -> Fire:
    """One fire of the workspace with its turns, their tool calls and its children (NotFoundError otherwise)."""
    return fire_with_journal(fire=fire_get(workspace=workspace, fire_id=fire_id))


def fire_citations(*, fire: Fire) -> list[dict]:
    """What the fire's answer cited and dropped, in its order, each {id, verb, found, tags, content}
    (found False: the id is not, or no longer, in the workspace's lake); one query."""
    response = fire.response or {}
    wanted = [("cited", str(i)) for i in response.get("cited_ids") or []] + [
        ("dropped", str(i)) for i in response.get("dropped_ids") or []]
    found = Delta.objects.filter(workspace_id=fire.workspace_id, pk__in=[i for _, i in wanted]).in_bulk()
    return [{"id": i, "verb": verb, "found": i in found, "tags": found[i].tags if i in found else [],
             "content": found[i].content if i in found else ""} for verb, i in wanted]


def fires_filtered(*, workspace, mode: str = "", status: str = "", stop_reason: str = "", errored: bool = False,
                   text: str = ""):
    """The workspace's top-level fires, newest first (a queryset, to paginate), narrowed to a mode, a
    status, a stop reason, those that failed or recorded an error (`errored`), and those whose
    question or answer contains `text` (any case, as `fires_top_level`). An empty criterion narrows nothing."""
    fires = fires_top_level(workspace=workspace, modes=[mode] if mode else None, statuses=[status] if status else None,
                            search=text)
    if stop_reason:
        fires = fires.filter(stop_reason=stop_reason)
    if errored:
        fires = fires.filter(models.Q(status=Fire.Status.FAILED) | ~models.Q(error=""))
    return fires.order_by("-created_at", "-id")
