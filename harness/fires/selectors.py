"""Reads of fires, always scoped by workspace."""


from fathom.selectors import workspace_row_get
from fathom.tracing.models import TraceEvent
from harness.fires.models import Fire
from harness.runtime.models import Session

TRACE_FIELDS = ["at", "kind", "name", "status", "span_id", "parent_span_id", "call_id", "actor_id", "duration_ms",
                "model", "provider", "input_tokens", "output_tokens", "cost", "error"]
TRACE_LIMIT = 2000


def fire_get(*, workspace, fire_id) -> Fire:
    return workspace_row_get(Fire, workspace=workspace, pk=fire_id, noun="fire")


def fires_list(*, workspace, session: Session | None = None):
    fires = Fire.objects.filter(workspace=workspace)
    return fires.filter(session=session) if session is not None else fires


def fire_with_journal(*, fire: Fire) -> Fire:
    """The fire with its turns, their tool calls, its children and its quality record with its
    attempts, read in five queries."""
    return Fire.objects.select_related("quality").prefetch_related("turns__calls", "children",
                                                                    "quality__attempts").get(pk=fire.pk)


def fire_trace(*, fire: Fire) -> list[dict]:
    """The fire's trace events (model calls, tool calls, its child fires), oldest first."""
    if not fire.trace_id:
        return []
    return list(TraceEvent.objects.filter(workspace_id=fire.workspace_id, trace_id=fire.trace_id)
                .order_by("at", "id").values(*TRACE_FIELDS)[:TRACE_LIMIT])
