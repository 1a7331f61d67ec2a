"""The dashboard's own reads, composed from the apps' selectors: what the first run has done, the
proposals the live feed has not sent yet, and one conversation as Festinger saw it."""

from fathom.errors import NotFoundError
from fathom.selectors import apikeys_active, model_assignments_of
from festinger.loops.selectors import loop_events_list, loop_states_or_none
from festinger.selectors import recollections_list
from harness.fires.selectors import fires_feed_page
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
