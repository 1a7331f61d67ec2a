"""Runs, as an operator of Langfuse or LangSmith expects them: the workspace's fires (each a trace)
newest first, filtered and paginated, beside its conductor runs; and a conductor run on a page of its
own, with its plan, its graph (inline SVG, laid out here, server-side), every model and tool call of
its trace, its research fires and Cancel.

A fire that runs inside another's trace (a conductor's research fire, a child fire) has its usage counted
by its own run id in that trace (`selectors.fires_usage`); every other fire's is its whole trace's."""

from dataclasses import dataclass

from django.core.paginator import EmptyPage, Paginator
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.access import dashboard_view
from dashboard.filters import FireFilterForm
from dashboard.selectors import fires_usage
from fathom.errors import NotFoundError
from fathom.tracing.selectors import traces_totals
from harness.conductor.models import AgendaItem, Run
from harness.conductor.selectors import (
    research_calls_of_fires,
    run_get,
    run_trace_calls,
    run_with_agenda,
    runs_overview,
)
from harness.fires.models import Fire
from harness.fires.selectors import fires_filtered

FIRES_PER_PAGE = 25
RUNS_PER_PAGE = 10


@dataclass
class FireRow:
    fire: Fire
    usage: dict
    research: object  # the conductor's CapabilityCall the fire researches for, or None

    @property
    def duration(self) -> float | None:
        """Seconds from its start to its end (to now while it runs); None before it started."""
        if self.fire.started_at is None:
            return None
        return ((self.fire.finished_at or timezone.now()) - self.fire.started_at).total_seconds()


@require_GET
@dashboard_view
def runs_view(request):
    """The workspace's fires (filtered, a page at a time) and its conductor runs."""
    workspace = request.dashboard.workspace
    form = FireFilterForm(request.GET)
    if not form.is_valid():
        return render(request, "dashboard/runs.html", {"current": request.dashboard, "form": form}, status=400)
    wanted = form.cleaned_data
    fires = fires_filtered(workspace=workspace, mode=wanted["mode"], status=wanted["status"],
                           stop_reason=wanted["stop"], errored=wanted["errored"], text=wanted["q"])
    fires_page = _page(fires, FIRES_PER_PAGE, wanted["page"], noun="fires")
    runs_page = _page(runs_overview(workspace=workspace), RUNS_PER_PAGE, wanted["runs_page"], noun="runs")
    page_fires = list(fires_page.object_list)
    research = research_calls_of_fires(workspace=workspace, fires=page_fires)
    usage = fires_usage(workspace, page_fires)
    run_usage = traces_totals(workspace=workspace, trace_ids=[run.trace_id for run in runs_page if run.trace_id])
    return render(request, "dashboard/runs.html", {
        "current": request.dashboard, "form": form, "filtered": any(wanted[name] for name in
                                                                     ("q", "mode", "status", "stop", "errored")),
        "fires_page": fires_page, "runs_page": runs_page,
        "fires_query": _query_without(request, "page"), "runs_query": _query_without(request, "runs_page"),
        "fires": [FireRow(fire=fire, usage=usage[fire.pk], research=research.get(fire.pk)) for fire in page_fires],
        "runs": [{"run": run, "usage": run_usage.get(run.trace_id)} for run in runs_page]})


@require_GET
@dashboard_view
def run_view(request, run_id):
    """One conductor run: status, plan (its agenda), graph, decisions, every model and tool call of its
    trace, its research fires (each a link to its loop view) and Cancel while it runs."""
    workspace = request.dashboard.workspace
    run = run_with_agenda(run=run_get(workspace=workspace, run_id=run_id))
    items = list(run.agenda.all())
    calls = {call.item_id: call for call in run.calls.all()}
    trace = run_trace_calls(run=run)
    return render(request, "dashboard/run.html", {
        "current": request.dashboard, "run": run, "decisions": list(run.decisions.all()),
        "items": [{"item": item, "call": calls.get(item.pk)} for item in items],
        "graph": run_graph_layout(run, items, calls), "trace": trace,
        "usage": traces_totals(workspace=workspace, trace_ids=[run.trace_id]).get(run.trace_id)})


def _query_without(request, name: str) -> str:
    """The page's query string without `name` (a pager's link adds its own)."""
    kept = request.GET.copy()
    kept.pop(name, None)
    return kept.urlencode()


def _page(rows, size: int, number: int | None, *, noun: str):
    try:
        return Paginator(rows, size).page(number or 1)
    except EmptyPage:
        raise NotFoundError(f"no page {number} of {noun}") from None


# --- The graph ---------------------------------------------------------------------------------------

NODE_WIDTH, NODE_HEIGHT, GAP_X, GAP_Y = 190, 62, 56, 20
TASK_CHARS = 26


def run_graph_layout(run: Run, items: list[AgendaItem], calls: dict) -> dict:
    """The run as layers, left to right: the conductor, then each agenda item one layer right of the
    last item it depends on; an edge from each dependency (the conductor for an item that waits for
    none). Returns the SVG's size, nodes (x, y, text, link) and edges (path data)."""
    layer_of = {}
    for item in items:  # numbered in order, and an item depends only on earlier ones
        depends = [number for number in item.depends_on if number in layer_of]
        layer_of[item.number] = 1 + max((layer_of[number] for number in depends), default=0)
    columns: dict[int, list] = {0: [None]}
    for item in items:
        columns.setdefault(layer_of[item.number], []).append(item)
    place = {}
    nodes = []
    for layer, members in sorted(columns.items()):
        for row, item in enumerate(members):
            x, y = layer * (NODE_WIDTH + GAP_X), row * (NODE_HEIGHT + GAP_Y)
            place[item.number if item else 0] = (x, y)
            nodes.append({"x": x, "y": y, **(_item_node(item, calls.get(item.pk)) if item else _conductor_node(run))})
    edges = []
    for item in items:
        for source in [number for number in item.depends_on if number in place] or [0]:
            (x1, y1), (x2, y2) = place[source], place[item.number]
            x1, y1, y2 = x1 + NODE_WIDTH, y1 + NODE_HEIGHT / 2, y2 + NODE_HEIGHT / 2
            middle = (x1 + x2) / 2
            edges.append({"path": f"M{x1},{y1} C{middle},{y1} {middle},{y2} {x2},{y2}", "source": source,
                          "target": item.number})
    width = max(node["x"] for node in nodes) + NODE_WIDTH
    height = max(node["y"] for node in nodes) + NODE_HEIGHT
    return {"width": width, "height": height, "nodes": nodes, "edges": edges, "node_width": NODE_WIDTH,
            "node_height": NODE_HEIGHT}


def _conductor_node(run: Run) -> dict:
    return {"number": 0, "state": run.status, "title": "Conductor", "detail": _count(run.decisions_made, "decision"),
            "task": _clip(run.objective), "full": run.objective, "fire_id": None}


def _item_node(item: AgendaItem, call) -> dict:
    task = item.input.get("task", "")
    calls = f" · {_count(call.model_calls, 'model call')}" if call else ""
    return {"number": item.number, "state": item.state, "title": f"{item.number} · {item.capability}",
            "detail": f"{item.get_state_display().lower()}{calls}", "task": _clip(task), "full": task,
            "fire_id": call.fire_id if call else None}


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _clip(text: str) -> str:
    return text if len(text) <= TASK_CHARS else text[:TASK_CHARS - 1] + "…"
