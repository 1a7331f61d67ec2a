"""time(action, ...): the lake along its time axis (seed 000's temporal-window lens): what happened
between two moments, how much happened per hour/day/week/month, what surrounds a moment."""

from datetime import timedelta

from django.db.models import Count
from django.db.models.functions import Trunc

from harness.fires.tools.base import ToolContext
from harness.fires.tools.lenses import Action, anchor, deltas, lens, limit_of, listing, span_text, window

FILTERS = ("kind", "tags")
DEFAULT_AROUND_MINUTES = 60


def between(ctx: ToolContext, args: dict) -> str:
    since, until = window(args)
    queryset = deltas(ctx, args, since=since, until=until)
    rows = list(queryset.order_by("created_at", "id")[: limit_of(args)])
    return listing(f"deltas {span_text(since, until)}, oldest first", rows, total=queryset.count(),
                   empty="nothing in this window")


def bucket_by(ctx: ToolContext, args: dict) -> str:
    unit = args.get("unit") or "day"
    since, until = window(args, default_days=30 if not args.get("since") else None)
    buckets = (deltas(ctx, args, since=since, until=until)
               .annotate(bucket=Trunc("created_at", unit)).values("bucket")
               .annotate(n=Count("id")).order_by("bucket"))
    rows = [(b["bucket"], b["n"]) for b in buckets]
    if not rows:
        return f"no deltas {span_text(since, until)}"
    fmt = {"hour": "%Y-%m-%d %H:00", "day": "%Y-%m-%d", "week": "week of %Y-%m-%d", "month": "%Y-%m"}[unit]
    peak = max(n for _, n in rows)
    lines = [f"deltas per {unit}, {span_text(since, until)} ({sum(n for _, n in rows)} in all, "
             f"{len(rows)} non-empty {unit}s):"]
    lines += [f"- {bucket.strftime(fmt)}: {n} {'█' * max(1, round(20 * n / peak))}" for bucket, n in rows]
    return "\n".join(lines)


def around(ctx: ToolContext, args: dict) -> str:
    at, delta = anchor(ctx, args)
    minutes = args.get("minutes") or DEFAULT_AROUND_MINUTES
    since, until = at - timedelta(minutes=minutes), at + timedelta(minutes=minutes, microseconds=1)
    queryset = deltas(ctx, args, since=since, until=until)
    total = queryset.count()
    limit = limit_of(args)
    # The nearest deltas on either side of the anchor, shown in time order.
    candidates = [*queryset.filter(created_at__lte=at).order_by("-created_at", "-id")[:limit],
                  *queryset.filter(created_at__gt=at).order_by("created_at", "id")[:limit]]
    nearest = sorted(candidates, key=lambda d: abs((d.created_at - at).total_seconds()))
    rows = sorted(nearest[:limit], key=lambda d: (d.created_at, d.id))
    what = f"[{delta.id}]" if delta else at.strftime("%Y-%m-%d %H:%M")
    return listing(f"within {minutes} minutes of {what}", rows, total=total, empty="nothing",
                   marked={delta.id} if delta else ())


TOOL = lens(name="time", description="The lake along time: what happened between two moments, activity per "
                                     "hour/day/week/month, what surrounds a moment or a delta.", actions=[
    Action("between", "the deltas in [since, until), oldest first", between, ("since",), ("until", *FILTERS, "limit")),
    Action("bucket_by", "how many deltas per hour/day/week/month (default: per day, last 30 days)", bucket_by,
           (), ("unit", "since", "until", "days", *FILTERS)),
    Action("around", f"the deltas within ±minutes (default {DEFAULT_AROUND_MINUTES}) of a delta or a moment; "
           "the anchor is marked ▸", around, (), ("delta_id", "at", "minutes", *FILTERS, "limit")),
])
