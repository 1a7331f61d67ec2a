"""The dashboard's panels and card sections, each registered with its template (see `panels`).

To add one when its feature lands on main: write a function here (or in a module imported below)
that reads through the feature's selectors, register it, and write its template under
`templates/dashboard/panels/` or `templates/dashboard/sections/`. A side panel's function takes
the Current and returns its template's context, or None to say nothing; a card section's takes
(workspace, fires) and returns {fire id: context} for the whole page in a fixed number of queries."""

import json
import zlib
from datetime import timedelta

from django.utils import timezone

from dashboard.festinger import conflict_items, recollections_by_turn, recollections_folded
from dashboard.panels import card_section, side_panel
from dashboard.selectors import fires_usage
from festinger.loops.selectors import loop_conversations
from festinger.models import ConflictStatus
from festinger.selectors import conflicts_list, recollections_list, recollections_of_runs
from harness.autonomy.models import AutonomyMode
from harness.autonomy.pressure import SIGNALS
from harness.autonomy.selectors import (
    decisions_list,
    directives_list,
    inbox_items,
    inbox_kind,
    pressure_series,
    producer_run_words,
    producer_runs_with_effect,
)
from harness.autonomy.services import autonomy_now, autonomy_settings_get
from harness.conductor.models import AgendaItem
from harness.conductor.selectors import runs_recent
from harness.fires.models import Fire
from harness.fires.tools.plan import MARKERS
from harness.quality.selectors import feedback_counts_of_fires, quality_runs_of_fires
from harness.runtime.background import task_label
from harness.runtime.selectors import tasks_active, tasks_of_fires
from proposals.models import ProposalStatus
from proposals.selectors import proposals_list

PANEL_ROWS = 10
RECOLLECTION_ROWS = 5
DECISION_ROWS = 5
PRODUCER_ROWS = 3
LOOPS_WINDOW = timedelta(days=7)


@card_section(name="quality", template="dashboard/sections/quality.html")
def quality(workspace, fires: list[Fire]) -> dict:
    """The quality harness's verdict on each answer (contract, verifier, grade, retries, degraded) and the
    thumbs that calibrate the verifier (three queries for the page). A fire with neither a run nor an
    answer shows nothing."""
    ids = [fire.pk for fire in fires]
    runs = quality_runs_of_fires(workspace=workspace, fire_ids=ids)
    thumbs = feedback_counts_of_fires(workspace=workspace, fire_ids=ids)
    shown = {}
    for fire in fires:
        run = runs.get(fire.pk)
        answered = fire.is_terminal and bool(fire.response)
        if run is None and not answered:
            continue
        attempts = list(run.attempts.all()) if run else []
        final = next((a for a in attempts if a.number == run.final_attempt), attempts[-1] if attempts else None)
        shown[fire.pk] = {"fire": fire, "run": run, "final": final, "retries": max(len(attempts) - 1, 0),
                          "scores": sorted((run.scores or {}).items()) if run else [],
                          "thumbs": thumbs.get(fire.pk, {"up": 0, "down": 0}), "may_rate": answered}
    return shown


@card_section(name="thinking", template="dashboard/sections/thinking.html")
def thinking(workspace, fires: list[Fire]) -> dict:
    """The thinking accordion and the plan board of each fire, from its prefetched journal, with the
    usage of its whole trace (the loop's model calls and the quality harness's: classifier, planner,
    verifier, judge; of a fire that runs inside another's trace, such as a conductor's research fire, its
    own part of it), so the card counts what the trace shows (one query for the page, two with such a fire
    on it)."""
    usage = fires_usage(workspace, fires)
    return {fire.pk: {**thinking_of(fire), "usage": usage[fire.pk]} for fire in fires}


def thinking_of(fire: Fire) -> dict:
    turns = []
    for turn in fire.turns.all():
        calls = [{"call": call, "hue": tool_hue(call.name), "arguments": pretty(call.arguments)}
                 for call in turn.calls.all()]
        turns.append({"turn": turn, "calls": calls})
    plan = [{**step, "marker": MARKERS.get(step.get("status"), MARKERS["pending"])} for step in fire.plan or []]
    return {"fire": fire, "turns": turns, "plan": plan, "open": not fire.is_terminal,
            "tool_calls": sum(len(t["calls"]) for t in turns), **plan_history([t["turn"] for t in turns])}


@card_section(name="recollections", template="dashboard/sections/recollections.html")
def recollections(workspace, fires: list[Fire]) -> dict:
    """What Festinger injected into each fire's prompts, by turn (one query for the page); a fire whose
    prompts received nothing shows none."""
    found = recollections_of_runs(workspace=workspace, run_ids=[fire.pk for fire in fires])
    return {fire.pk: recollections_by_turn(fire, found[str(fire.pk)]) for fire in fires if str(fire.pk) in found}


# Calls that are not work on a plan step: the plan itself, the answer, the review pass's outcome.
PLAN_NEUTRAL_TOOLS = {"plan", "respond", "skip", "propose_provenance"}


def plan_history(turns) -> dict:
    """The plan board's revisions (each plan call after the first replaced the plan: the earlier
    versions, as asked) and its drift (calls made under a plan that named no step of it), read from
    the journal already loaded."""
    versions, drift, planned = [], [], False
    for turn in turns:
        for call in turn.calls.all():
            if call.name == "plan":
                planned = True
                versions.append({"turn": turn.number, "steps": call.arguments.get("steps") or [],
                                 "question": call.arguments.get("question", "")})
            elif planned and call.plan_step is None and call.name not in PLAN_NEUTRAL_TOOLS:
                drift.append(call.name)
    return {"revisions": versions[:-1], "drift": drift}


@card_section(name="tasks", template="dashboard/sections/tasks.html")
def background_tasks(workspace, fires: list[Fire]) -> dict:
    """The background tasks each fire started (one query for the page); fires without any show none."""
    by_fire: dict = {}
    for task in tasks_of_fires(workspace=workspace, fire_ids=[fire.pk for fire in fires]):
        by_fire.setdefault(task.fire_id, {"tasks": []})["tasks"].append({"task": task, "label": task_label(task)})
    return by_fire


@side_panel(name="proposals", title="Waiting for you", template="dashboard/panels/proposals.html")
def pending_proposals(current) -> dict | None:
    pending = list(proposals_list(workspace=current.workspace, status=ProposalStatus.PENDING)
                   .order_by("-created_at", "-id")[:PANEL_ROWS])
    return {"proposals": pending} if pending else None


@side_panel(name="conflicts", title="Festinger conflicts", template="dashboard/panels/conflicts.html")
def pending_conflicts(current) -> dict | None:
    pending = list(conflicts_list(workspace=current.workspace, status=ConflictStatus.PENDING)[:PANEL_ROWS])
    return {"conflicts": conflict_items(pending)} if pending else None


@side_panel(name="loops", title="Festinger loop detector", template="dashboard/panels/loops.html")
def loop_detector(current) -> dict | None:
    """The conversations the loop detector acted in this week (the proxy's clients', the fires'), the latest
    first: detections, mitigations, and the level and circuit breaker each is at now."""
    found = loop_conversations(workspace=current.workspace, since=timezone.now() - LOOPS_WINDOW, limit=PANEL_ROWS)
    return {"conversations": found} if found else None


@side_panel(name="recollections", title="Festinger recollections", template="dashboard/panels/recollections.html")
def recent_recollections(current) -> dict | None:
    """The latest recollections Festinger injected into a prompt, a fire's or a proxied call's."""
    rows = list(recollections_list(workspace=current.workspace)[:RECOLLECTION_ROWS * 4])  # repeats fold
    return {"recollections": recollections_folded(rows)[:RECOLLECTION_ROWS]} if rows else None


@side_panel(name="inbox", title="Inbox", template="dashboard/panels/inbox.html")
def inbox(current) -> dict | None:
    """What Fathom's reflections, Sit transcripts and directives left for the operator, not yet marked."""
    items = list(inbox_items(workspace=current.workspace, state="new")[:PANEL_ROWS])
    return {"items": [{"delta": d, "kind": inbox_kind(d)} for d in items]} if items else None


@side_panel(name="pressure", title="Pressure", template="dashboard/panels/pressure.html")
def pressure(current) -> dict:
    """The autonomy switch, and unless it is off the pressure now (gauge and breakdown by signal) with
    its series as an inline SVG plot, and beside them why autonomy does what it does: what the sweep
    would decide now, the latest decisions and the producers' runs with their effect, in words."""
    settings = autonomy_settings_get(workspace=current.workspace)
    ctx = {"settings": settings, "modes": AutonomyMode.values}
    if settings.mode == AutonomyMode.OFF:
        return ctx
    now = timezone.now()
    verdict, reading = autonomy_now(settings=settings, now=now)
    series = list(pressure_series(workspace=current.workspace, hours=settings.series_hours))
    signals = {signal.name: signal for signal in SIGNALS}
    breakdown = sorted(({"name": name, "signal": signals.get(name), **values,
                         "never": name == "since_sit" and reading.extra.get("never_sat")}
                        for name, values in reading.breakdown.items()), key=lambda row: -row["contribution"])
    runs = [{"run": run, "words": producer_run_words(run)}
            for run in producer_runs_with_effect(workspace=current.workspace, limit=PRODUCER_ROWS)]
    return {**ctx, "reading": reading, "breakdown": breakdown, "percent": round(reading.value * 100),
            "plot": pressure_plot(series, threshold=settings.threshold, hours=settings.series_hours, now=now),
            "now": verdict, "decisions": list(decisions_list(workspace=current.workspace)[:DECISION_ROWS]),
            "runs": runs}


@side_panel(name="directives", title="Crystal of directives", template="dashboard/panels/directives.html")
def directives(current) -> dict | None:
    """Things Fathom has named for itself, newest first."""
    found = list(directives_list(workspace=current.workspace)[:PANEL_ROWS])
    return {"directives": found} if found else None


@side_panel(name="tasks", title="Background tasks", template="dashboard/panels/tasks.html")
def running_tasks(current) -> dict | None:
    active = tasks_active(workspace=current.workspace, limit=PANEL_ROWS)
    return {"tasks": [{"task": task, "label": task_label(task)} for task in active]} if active else None


PLOT_WIDTH, PLOT_HEIGHT = 280, 70
PLOT_MIN_SPAN = timedelta(minutes=10)


def pressure_plot(series, *, threshold: float, hours: int, now) -> dict:
    """The series as an SVG polyline (a point when it is one sample) over the time its samples span, at
    least PLOT_MIN_SPAN and at most the last `hours` (x: time, y: 0 at the bottom to 1 at the top), with
    the threshold's line; values for a text summary beside it."""
    oldest = series[0][0] if series else now
    span = min(max(now - oldest, PLOT_MIN_SPAN), timedelta(hours=hours) or PLOT_MIN_SPAN).total_seconds()
    points = []
    for at, value in series:
        x = PLOT_WIDTH * (1 - min(span, max(0.0, (now - at).total_seconds())) / span)
        points.append((round(x, 1), round(PLOT_HEIGHT * (1 - min(1.0, max(0.0, value))), 1)))
    values = [value for _, value in series]
    minutes = round(span / 60)
    return {"width": PLOT_WIDTH, "height": PLOT_HEIGHT, "points": " ".join(f"{x},{y}" for x, y in points),
            "point": points[0] if len(points) == 1 else None, "count": len(values),
            "threshold_y": round(PLOT_HEIGHT * (1 - threshold), 1),
            "span": f"{minutes} min" if minutes < 120 else f"{round(minutes / 60)} h",
            "low": min(values) if values else None, "high": max(values) if values else None}


@side_panel(name="conductor", title="Conductor runs", template="dashboard/panels/conductor.html")
def conductor_runs(current) -> dict | None:
    """The newest multi-worker runs: objective, status, how much of the agenda is done."""
    runs = runs_recent(workspace=current.workspace, limit=5)
    if not runs:
        return None
    rows = []
    for run in runs:
        agenda = list(run.agenda.all())
        rows.append({"run": run, "items": len(agenda),
                     "done": sum(item.state == AgendaItem.State.DONE for item in agenda)})
    return {"runs": rows}


def tool_hue(name: str) -> int:
    """A stable colour per tool name (the accordion's bands)."""
    return zlib.crc32(name.encode()) % 360


def pretty(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
