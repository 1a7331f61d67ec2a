"""Reading traces back: one trace as a span tree with its totals, the list of traces, and usage
(tokens and cost) per day.

Accounting reads the `llm.call` end events directly (their columns hold tokens and cost): one
source of truth, no second write on the hot path, and a partial index keeps the scan to model calls."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import Count, Max, Q, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import TruncDate

from fathom.errors import NotFoundError
from fathom.tracing.models import Trace, TraceEvent
from fathom.tracing.names import words

LLM = "llm.call"
TOOL = "worker.tool"
TOKENS = ("input_tokens", "output_tokens", "cached_tokens")


def trace_get(*, workspace, trace_id: str) -> dict:
    """The trace's spans as a tree (children in start order), model-call counts per actor and the
    totals of tokens and cost. Raises NotFoundError when the workspace has no such trace."""
    rows = list(TraceEvent.objects.filter(workspace=workspace, trace_id=trace_id).order_by("at", "id"))
    if not rows:
        raise NotFoundError(f"no trace {trace_id!r} in this workspace")
    spans: dict[str, dict] = {}
    for row in rows:
        node = spans.get(row.span_id)
        if node is None:
            node = spans[row.span_id] = _node(row)
        if row.status:
            _end(node, row)
        elif row.kind != words(row.name)[0]:
            node["events"].append({"kind": row.kind, "at": row.at, "payload": row.payload})
    roots = []
    for node in spans.values():
        parent = spans.get(node["parent_span_id"])
        (parent["children"] if parent is not None else roots).append(node)
    calls = [node for node in spans.values() if node["name"] == LLM]
    return {
        "trace_id": trace_id,
        "started_at": rows[0].at,
        "ended_at": rows[-1].at,
        "status": _trace_status(roots),
        "totals": {"spans": len(spans), "model_calls": len(calls),
                   "failed_model_calls": sum(node["status"] == "error" for node in calls),
                   "tool_calls": sum(node["name"] == TOOL for node in spans.values()), **_sum(calls)},
        "actors": _per_actor(calls),
        "spans": roots,
    }


def traces_list(*, workspace, actor_id: str = "", run_id: str = ""):
    """Root span start events of the workspace's traces, newest first (a queryset, to paginate);
    `traces_totals` adds the counts of a page of them."""
    roots = trace_roots().filter(workspace=workspace)
    if actor_id:
        roots = roots.filter(actor_id=actor_id)
    if run_id:
        roots = roots.filter(run_id=run_id)
    return roots


def trace_roots():
    """The first event of every trace's root span: one row per trace."""
    return Trace.objects.all()


def traces_totals(*, workspace, trace_ids: list[str]) -> dict[str, dict]:
    """Per trace: spans, model calls, tool calls, tokens, cost, its end, and whether anything failed."""
    return _totals_by(TraceEvent.objects.filter(workspace=workspace, trace_id__in=trace_ids), "trace_id")


def runs_totals(*, workspace, run_ids: list[str]) -> dict[str, dict]:
    """`traces_totals` per run id instead of per trace: what one run of a shared trace did (a
    conductor's research fire is a run of its own inside the conductor run's trace)."""
    return _totals_by(TraceEvent.objects.filter(workspace=workspace, run_id__in=run_ids), "run_id")


def _totals_by(events, key: str) -> dict[str, dict]:
    grouped = (
        events.values(key)
        .annotate(spans=Count("span_id", distinct=True),
                  model_calls=Count("id", filter=Q(name=LLM, kind=words(LLM)[0])),
                  failed_model_calls=Count("id", filter=Q(name=LLM, status="error")),
                  tool_calls=Count("id", filter=Q(name=TOOL, kind=words(TOOL)[0])),
                  input_tokens=Sum("input_tokens", filter=Q(name=LLM)),
                  output_tokens=Sum("output_tokens", filter=Q(name=LLM)),
                  cached_tokens=Sum("cached_tokens", filter=Q(name=LLM)),
                  cost=Sum("cost", filter=Q(name=LLM)),
                  ended_at=Max("at"),
                  errors=Count("id", filter=Q(status="error")))
    )
    return {row.pop(key): _zeroed(row) for row in grouped}


def usage_by_day(*, workspace, since: date, until: date) -> dict:
    """Model calls, tokens and cost per UTC day from `since` to `until` (both included), each day
    broken down by role, provider and model, with the totals of the range."""
    start = datetime.combine(since, time.min).replace(tzinfo=UTC)
    end = datetime.combine(until + timedelta(days=1), time.min).replace(tzinfo=UTC)
    grouped = (
        TraceEvent.objects.filter(workspace=workspace, name=LLM, at__gte=start, at__lt=end)
        .exclude(status="")
        .annotate(day=TruncDate("at"), role=KeyTextTransform("role", "payload"))
        .values("day", "role", "provider", "model")
        .annotate(calls=Count("id"), failed=Count("id", filter=Q(status="error")),
                  input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"),
                  cached_tokens=Sum("cached_tokens"), cost=Sum("cost"))
        .order_by("day", "role", "provider", "model")
    )
    days: dict[date, dict] = {}
    for row in grouped:
        day = days.setdefault(row["day"], {"day": row["day"], **_empty(), "by_model": []})
        line = {"role": row["role"] or "", "provider": row["provider"], "model": row["model"],
                **{key: row[key] or 0 for key in ("calls", "failed", *TOKENS)}, "cost": row["cost"] or Decimal(0)}
        day["by_model"].append(line)
        _add(day, line)
    totals = _empty()
    for day in days.values():
        _add(totals, day)
    return {"from": since, "to": until, "totals": totals, "days": list(days.values())}


# --- helpers ----------------------------------------------------------------------------------------------

def _node(row: TraceEvent) -> dict:
    return {
        "span_id": row.span_id, "parent_span_id": row.parent_span_id, "name": row.name, "status": "running",
        "started_at": row.at, "ended_at": None, "duration_ms": None, "actor_id": row.actor_id, "run_id": row.run_id,
        "task_id": row.task_id, "call_id": row.call_id, "model": row.model, "provider": row.provider,
        "input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "cost": Decimal(0), "error": "",
        "attributes": row.payload, "events": [], "children": [],
    }


def _end(node: dict, row: TraceEvent) -> None:
    node.update(status=row.status, ended_at=row.at, duration_ms=row.duration_ms, error=row.error,
                attributes=row.payload, model=row.model or node["model"], provider=row.provider or node["provider"],
                input_tokens=row.input_tokens, output_tokens=row.output_tokens, cached_tokens=row.cached_tokens,
                cost=row.cost)


def _trace_status(roots: list[dict]) -> str:
    statuses = {node["status"] for node in roots}
    if "error" in statuses:
        return "error"
    return "running" if "running" in statuses else "ok"


def _per_actor(calls: list[dict]) -> list[dict]:
    actors: dict[str, list] = defaultdict(list)
    for node in calls:
        actors[node["actor_id"]].append(node)
    return [{"actor_id": actor, "model_calls": len(nodes),
             "failed_model_calls": sum(n["status"] == "error" for n in nodes), **_sum(nodes)}
            for actor, nodes in sorted(actors.items())]


def _sum(nodes: list[dict]) -> dict:
    return {**{key: sum(n[key] for n in nodes) for key in TOKENS}, "cost": sum((n["cost"] for n in nodes), Decimal(0))}


def _empty() -> dict:
    return {"calls": 0, "failed": 0, **dict.fromkeys(TOKENS, 0), "cost": Decimal(0)}


def _add(total: dict, part: dict) -> None:
    for key in ("calls", "failed", *TOKENS, "cost"):
        total[key] += part[key]


def _zeroed(row: dict) -> dict:
    return {key: (value if value is not None else (Decimal(0) if key == "cost" else 0)) for key, value in row.items()}

