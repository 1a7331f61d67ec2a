"""Reads of conductor runs: one run, the list, its events, and its graph (seed 004's hierarchy:
prompt -> conductor -> worker branches -> tool nodes, with the model calls of every actor)."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Q

from fathom.errors import NotFoundError
from fathom.selectors import workspace_row_get
from fathom.tracing.selectors import LLM, TOOL, trace_get
from harness.conductor.models import RESEARCH_KEY_PREFIX, AgendaItem, CapabilityCall, Run, RunEvent

CONDUCTOR_SPANS = {"conductor.bootstrap": "bootstrap", "conductor.decide": "decide"}
WORKER_SPAN = "conductor.worker"


def run_get(*, workspace, run_id) -> Run:
    return workspace_row_get(Run, workspace=workspace, pk=run_id, noun="run")


def runs_list(*, workspace):
    return Run.objects.filter(workspace=workspace).order_by("-created_at", "-id")


def run_with_agenda(*, run: Run) -> Run:
    return (Run.objects.prefetch_related("agenda", "decisions", "calls", "calls__item").get(pk=run.pk))


def run_events_after(*, run_id, after: int = 0, limit: int = 200) -> list[RunEvent]:
    return list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit])


def run_graph(*, run: Run) -> dict:
    """The run as a tree: the prompt (the objective) -> the conductor (its bootstrap and decision
    model calls) -> one branch per capability call (its worker's model calls) -> the tool calls
    made in that branch. Every node names its span and its run-scoped ids, every model call its role;
    `actors` counts the model calls of every actor of the run's trace, none hidden, and
    totals.model_calls_by_role every call by its role."""
    spans = _spans(run)
    conductor_calls, branches = [], defaultdict(list)
    for span, ancestors in _walk(spans):
        names = [a["name"] for a in ancestors]
        if span["name"] == WORKER_SPAN:
            branches[span["call_id"]].append(span)
        elif span["name"] == LLM and not any(n == WORKER_SPAN for n in names):
            # a call of another actor inside a conductor span (a middleware's) is no bootstrap or decision
            phase = next((CONDUCTOR_SPANS[n] for n in reversed(names) if n in CONDUCTOR_SPANS), "other") \
                if span["actor_id"] == run.actor_id else "other"
            conductor_calls.append({"kind": "model_call", "phase": phase, "role": _role(span),
                                    **_ids(span, str(run.pk))})
    workers = []
    for call in CapabilityCall.objects.filter(run=run).select_related("item").order_by("created_at", "id"):
        inside = [node for root in branches.get(call.call_id, []) for node, _ in _walk([root])]
        model_calls = [node for node in inside if node["name"] == LLM]
        tools = [node for node in inside if node["name"] == TOOL]
        workers.append({
            "kind": "worker", "worker": call.worker, "item": call.item.number, "call_id": call.call_id,
            "actor_id": call.actor_id, "run_id": str(run.pk), "status": call.status, "attempts": call.attempts,
            "fire_id": str(call.fire_id) if call.fire_id else None, "model_calls": len(model_calls),
            "span_ids": [root["span_id"] for root in branches.get(call.call_id, [])],
            "model_call_ids": [node["call_id"] for node in model_calls],
            "model_calls_by_actor": _count_by(model_calls, "actor_id"),
            "model_calls_by_role": _count_by([{"role": _role(node)} for node in model_calls], "role"),
            "children": [{"kind": "tool", "name": node["attributes"].get("tool", ""), **_ids(node, str(run.pk)),
                          "model_calls": sum(inner["name"] == LLM for inner, _ in _walk(node["children"]))}
                         for node in tools],
        })
    actors = trace_actors(spans)
    # The conductor's own calls; another actor's call made inside one (Festinger's writer, learning
    # from the objective) is listed beside them and counted under its own actor.
    own_calls = [call for call in conductor_calls if call["actor_id"] == run.actor_id]
    roles = _count_by([{"role": _role(span)} for span, _ in _walk(spans) if span["name"] == LLM], "role")
    return {
        "run_id": str(run.pk), "trace_id": run.trace_id, "status": run.status,
        "totals": {"model_calls": sum(actors.values()), "conductor_model_calls": len(own_calls),
                   "bootstrap_calls": sum(c["phase"] == "bootstrap" for c in own_calls),
                   "decision_calls": sum(c["phase"] == "decide" for c in own_calls),
                   "worker_calls": _count_by(workers, "worker"),
                   "tool_calls": sum(len(w["children"]) for w in workers), "model_calls_by_role": roles},
        "actors": [{"actor_id": actor, "model_calls": count} for actor, count in sorted(actors.items())],
        "tree": {"kind": "prompt", "objective": run.objective, "span_id": run.root_span_id, "run_id": str(run.pk),
                 "children": [{"kind": "conductor", "actor_id": run.actor_id, "run_id": str(run.pk),
                               "model_calls": len(conductor_calls), "calls": conductor_calls,
                               "children": workers}]},
    }


def trace_actors(spans: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for span, _ in _walk(spans):
        if span["name"] == LLM:
            counts[span["actor_id"]] += 1
    return dict(counts)


def _spans(run: Run) -> list[dict]:
    if not run.trace_id:
        return []
    try:
        return trace_get(workspace=run.workspace_id, trace_id=run.trace_id)["spans"]
    except NotFoundError:  # its events were pruned (FATHOM_TRACE_RETENTION_DAYS): the rows still say the rest
        return []


def _walk(roots: list[dict], ancestors: tuple = ()):
    for node in roots:
        yield node, ancestors
        yield from _walk(node["children"], (*ancestors, node))


def _role(span: dict) -> str:
    """The role a model call was made for (conductor, main, review, judge, writer, ...)."""
    return str(span["attributes"].get("role", ""))


def _ids(span: dict, run_id: str) -> dict:
    """A node's ids: the run's, the trace's span, the call's; `span_run_id` is the run the span was
    written under (a research fire's spans carry its fire's id there, the fire being a run of its own)."""
    return {"run_id": run_id, "span_id": span["span_id"], "call_id": span["call_id"], "actor_id": span["actor_id"],
            "span_run_id": span["run_id"], "task_id": span["task_id"], "status": span["status"]}


def _count_by(rows: list[dict], key: str) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[row[key]] += 1
    return dict(counts)


# --- The operator dashboard's reads (dashboard) -----------------------------------------------

def runs_recent(*, workspace, limit: int) -> list[Run]:
    """The workspace's newest runs with their agenda items (two queries)."""
    return list(runs_list(workspace=workspace).prefetch_related("agenda")[:limit])


def runs_overview(*, workspace):
    """The workspace's runs, newest first (a queryset, to paginate), each annotated with its agenda's
    size (`items`), the items done (`done`) and its capability calls by worker kind (`researchers`,
    `terminals`)."""
    return runs_list(workspace=workspace).annotate(
        items=Count("agenda", distinct=True),
        done=Count("agenda", filter=Q(agenda__state=AgendaItem.State.DONE), distinct=True),
        researchers=Count("calls", filter=Q(calls__worker="researcher"), distinct=True),
        terminals=Count("calls", filter=Q(calls__worker="terminal"), distinct=True))


def research_calls_of_fires(*, workspace, fires) -> dict:
    """{fire id: the capability call (with its run and agenda item) the fire researches for} of the
    fires that are a conductor run's research fires (one query; none when no fire is one)."""
    wanted = {fire.spawned_by.removeprefix(RESEARCH_KEY_PREFIX): fire.pk for fire in fires
              if fire.spawned_by.startswith(RESEARCH_KEY_PREFIX)}
    if not wanted:
        return {}
    calls = CapabilityCall.objects.filter(workspace=workspace, call_id__in=wanted).select_related("run", "item")
    return {wanted[call.call_id]: call for call in calls}


def run_trace_calls(*, run: Run) -> list[dict]:
    """Every model call and tool call of the run's trace (the conductor's, its workers', their
    research fires'), in start order: each span node of the trace (fathom.tracing) with `kind`
    model or tool and its `role` (a model call's) or `tool` (a tool call's)."""
    calls = []
    for node, _ in _walk(_spans(run)):
        if node["name"] == LLM:
            calls.append({**node, "kind": "model", "label": _role(node)})
        elif node["name"] == TOOL:
            calls.append({**node, "kind": "tool", "label": str(node["attributes"].get("tool", ""))})
    return sorted(calls, key=lambda node: node["started_at"])
