"""pattern(action, ...): aggregations over the lake (seed 000's pattern lens): the deltas carrying a
tag, counts by kind / source / any tag prefix over a window, what recently drew the most engagement
(cited, contained in provenance, engaged with), and what has gone dormant."""

from datetime import timedelta

from django.utils import timezone

from harness.fires.tools.base import ToolContext, ToolError
from harness.fires.tools.lenses import (
    TIME_FORMAT,
    Action,
    delta_lines,
    deltas,
    lens,
    limit_of,
    listing,
    span_text,
    window,
)
from lake.selectors import deltas_grouped, deltas_most_referenced

FILTERS = ("kind", "tags")
DEFAULT_SALIENT_DAYS = 7
DEFAULT_DORMANT_DAYS = 14
# Tags by which one delta points at another, and what each says about the target.
REFERENCE_VERBS = {"affirms": "cited", "from": "contained", "target": "engaged", "refutes": "dropped"}


def tagged(ctx: ToolContext, args: dict) -> str:
    if not args.get("tags") and not args.get("kind"):
        raise ToolError("tagged needs tags or kind")
    since, until = window(args)
    queryset = deltas(ctx, args, since=since, until=until)
    wanted = " + ".join([*(args.get("tags") or []), *([f"kind:{args['kind']}"] if args.get("kind") else [])])
    return listing(f"deltas tagged {wanted}, newest first", queryset.order_by("-created_at", "-id")[: limit_of(args)],
                   total=queryset.count(), empty="none")


def count_by(ctx: ToolContext, args: dict) -> str:
    by = _by(args)
    since, until = window(args)
    rows = _grouped(ctx, args, by=by, since=since, until=until)
    if not rows:
        return f"no deltas with a {by} {span_text(since, until)}"
    lines = [f"deltas by {by}, {span_text(since, until)}:"]
    lines += [f"- {v or '(none)'}: {n} (last {last.strftime(TIME_FORMAT)})" for v, n, last in rows]
    return "\n".join(lines)


def salient_recent(ctx: ToolContext, args: dict) -> str:
    since, until = window(args, default_days=DEFAULT_SALIENT_DAYS)
    rows = deltas_most_referenced(workspace=ctx.workspace, verbs=list(REFERENCE_VERBS), since=since, until=until,
                                  limit=limit_of(args))
    if not rows:
        return f"nothing from {span_text(since, until)} was cited, contained or engaged with yet"
    found = deltas(ctx, {}).in_bulk([row[0] for row in rows])
    lines = [f"most engaged-with deltas from {span_text(since, until)} (score = cited + contained + engaged "
             "more - dropped - engaged less):"]
    for delta_id, score, *by_verb in rows:
        detail = ", ".join(f"{REFERENCE_VERBS[verb]} {n}" for verb, n in zip(REFERENCE_VERBS, by_verb, strict=True)
                           if n)
        head, *rest = delta_lines(found[delta_id], marker="")
        lines += [f"- score {score:+d} ({detail}) {head}", *rest]
    return "\n".join(lines)


def dormant(ctx: ToolContext, args: dict) -> str:
    by = _by(args)
    days = args.get("days") or DEFAULT_DORMANT_DAYS
    quiet_since = timezone.now() - timedelta(days=days)
    rows = _grouped(ctx, args, by=by, since=None, until=None, quiet_since=quiet_since, most_recent_first=True)
    if not rows:
        return f"no {by} has gone quiet for {days} days: everything seen before is still active"
    lines = [f"{by} values active before but silent for the last {days} days (most recently active first):"]
    lines += [f"- {v or '(none)'}: {n} delta(s), last {last.strftime(TIME_FORMAT)}" for v, n, last in rows]
    return "\n".join(lines)


def _by(args: dict) -> str:
    return (args.get("by") or "kind").strip().removesuffix(":") or "kind"


def _grouped(ctx: ToolContext, args: dict, *, by: str, since, until, **options) -> list[tuple]:
    """(value, count, last seen) per source, or per value of the tags `<by>:<value>`, of the
    workspace's deltas narrowed by kind/tags and the window."""
    wanted = [*(args.get("tags") or []), *([f"kind:{args['kind'].removeprefix('kind:')}"] if args.get("kind") else [])]
    return deltas_grouped(workspace=ctx.workspace, by=by, tags=wanted, since=since, until=until,
                          limit=limit_of(args), **options)


TOOL = lens(name="pattern", description="Aggregations over the lake: deltas by tag, counts by kind/source/tag "
                                        "prefix, what recently drew the most engagement, what has gone dormant.",
            actions=[
    Action("tagged", "the deltas carrying all of tags (and/or a kind), newest first", tagged, (),
           ("tags", "kind", "since", "until", "days", "limit")),
    Action("count_by", "how many deltas per kind (default), source, or tag prefix (e.g. by=axis, by=tool)",
           count_by, (), ("by", "since", "until", "days", *FILTERS, "limit")),
    Action("salient_recent", f"the deltas of the window (default last {DEFAULT_SALIENT_DAYS} days) most cited, "
           "contained in provenance and engaged with", salient_recent, (), ("days", "since", "until", "limit")),
    Action("dormant", f"kinds/sources/tag values seen before but silent for the last days (default "
           f"{DEFAULT_DORMANT_DAYS})", dormant, (), ("by", "days", *FILTERS, "limit")),
])
