"""The dashboard's own reads, composed from the apps' selectors: what the first run has done, the
proposals the live feed has not sent yet, one conversation as Festinger saw it, and what each fire's
model calls cost."""

from fathom.errors import NotFoundError
from fathom.selectors import apikeys_active, model_assignments_of
from fathom.tracing.selectors import runs_totals, traces_totals
from festinger.loops.selectors import loop_events_list, loop_states_or_none
from festinger.selectors import recollections_list
from harness.fires.models import Fire
from harness.fires.selectors import fire_in_shared_trace, fires_feed_page
from lake.selectors import deltas_list
from proposals.selectors import proposals_list

LIVE_PROPOSALS = 20
CONVERSATION_ROWS = 50


def onboarding_state(*, current) -> dict:
    """Which first-run steps the current workspace has behind it (all False without a workspace)."""
    if current is None:
        return {"workspace": False}
    workspace = current.workspace
    return {
        "workspace": True,
        "apikey": apikeys_active(workspace=workspace).exists(),
        "model": model_assignments_of(workspace=workspace).filter(role="main").exists(),
        "delta": deltas_list(workspace=workspace).exists(),
        "question": bool(fires_feed_page(workspace=workspace, limit=1)),
    }


def proposal_newest_id(*, workspace) -> int:
    return proposals_list(workspace=workspace).order_by("-pk").values_list("pk", flat=True).first() or 0


def proposals_newer(*, workspace, after: int, match: dict | None = None) -> list[int]:
    """Ids of the workspace's proposals drafted after proposal `after` (those `proposals_list` finds with
    the filters `match`), oldest first (a bounded batch)."""
    return list(proposals_list(workspace=workspace, **(match or {})).filter(pk__gt=after).order_by("pk")
                .values_list("pk", flat=True)[:LIVE_PROPOSALS])


def conversation_get(*, workspace, session: str) -> dict:
    """A conversation of the workspace (the loop detector's name for it: a proxied client's session, a
    fingerprint): its newest loop events, its loop state now (None when Redis cannot say) and the newest
    recollections its prompts received. NotFoundError when the workspace knows no such conversation."""
    events = list(loop_events_list(workspace=workspace, session=session)[:CONVERSATION_ROWS])
    recollections = list(recollections_list(workspace=workspace, session=session)[:CONVERSATION_ROWS])
    if not events and not recollections:
        raise NotFoundError(f"no conversation {session!r} in this workspace")
    return {"session": session, "events": events, "recollections": recollections,
            "state": loop_states_or_none(workspace=workspace, sessions=[session]).get(session)}


def fires_usage(workspace, fires: list[Fire]) -> dict:
    """{fire id: {model_calls, input_tokens, output_tokens, cost}} of every model call the fire made: its
    trace's (the loop's and the quality harness's), or for a fire that runs inside another's trace (a
    conductor's research fire, a child fire: fires.selectors.fire_in_shared_trace), its own run's part of
    it; its own counters while its trace holds nothing. One query, two with such a fire among them."""
    shared = {fire.pk for fire in fires if fire_in_shared_trace(fire)}
    by_trace = traces_totals(workspace=workspace,
                             trace_ids=[fire.trace_id for fire in fires if fire.pk not in shared and fire.trace_id])
    by_run = runs_totals(workspace=workspace, run_ids=[str(fire.pk) for fire in fires if fire.pk in shared])
    usage = {}
    for fire in fires:
        found = by_run.get(str(fire.pk)) if fire.pk in shared else by_trace.get(fire.trace_id)
        usage[fire.pk] = found or {"model_calls": fire.model_calls, "input_tokens": fire.input_tokens,
                                   "output_tokens": fire.output_tokens, "cost": fire.cost}
    return usage
