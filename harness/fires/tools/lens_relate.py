"""relate(action, ...): engagement and relations (seed 000's relate lens): what involves a contact,
how a delta (or the feed) has been engaged with, what was dropped around a moment, which fires and
provenance cite a delta, and what links two deltas."""

from datetime import timedelta

from django.db.models import Q

from harness.fires.tools.base import ToolContext, ToolError
from harness.fires.tools.lenses import (
    TIME_FORMAT,
    Action,
    anchor,
    deltas,
    lens,
    limit_of,
    listing,
    resolve,
    span_text,
    window,
)
from lake.selectors import provenance_parents

DEFAULT_ENGAGEMENT_DAYS = 30
DEFAULT_DROPPED_MINUTES = 24 * 60


def with_contact(ctx: ToolContext, args: dict) -> str:
    contact = args["contact"].strip().removeprefix("contact:")
    since, until = window(args)
    queryset = deltas(ctx, args, since=since, until=until).filter(
        Q(tags__contains=[f"contact:{contact}"]) | Q(source__iexact=contact)).order_by("-created_at", "-id")
    return listing(f"deltas with {contact} (tagged contact:{contact} or from that source), newest first",
                   queryset[: limit_of(args)], total=queryset.count(), empty="none")


def engagement(ctx: ToolContext, args: dict) -> str:
    if args.get("delta_id"):
        delta = resolve(ctx, args["delta_id"])
        around = deltas(ctx, {}).filter(tags__overlap=[f"affirms:{delta.id}", f"refutes:{delta.id}",
                                                       f"target:{delta.id}"]).order_by("created_at", "id")
        rows = list(around)
        tally = {label: sum(1 for r in rows if tag in r.tags) for label, tag in (
            ("cited (affirms)", f"affirms:{delta.id}"), ("dropped (refutes)", f"refutes:{delta.id}"))}
        tally["engaged more"] = sum(1 for r in rows if f"target:{delta.id}" in r.tags and "engagement:more" in r.tags)
        tally["engaged less"] = sum(1 for r in rows if f"target:{delta.id}" in r.tags and "engagement:less" in r.tags)
        summary = ", ".join(f"{label} {n}" for label, n in tally.items())
        return f"engagement with [{delta.id}]: {summary}\n\n" + listing("the engagement deltas, oldest first", rows)
    since, until = window(args, default_days=DEFAULT_ENGAGEMENT_DAYS)
    recent = deltas(ctx, {}, since=since, until=until)
    feed = recent.filter(tags__overlap=["engagement:more", "engagement:less"]).order_by("-created_at", "-id")
    attests = recent.filter(tags__contains=["kind:engagement-attest"])
    cited = attests.filter(content__startswith="affirms").count()
    dropped = attests.filter(content__startswith="refutes").count()
    header = (f"engagement {span_text(since, until)}: {cited} citation(s) affirmed, {dropped} dropped; "
              f"feed preferences below")
    return header + "\n\n" + listing("engagement:more / engagement:less, newest first", feed[: limit_of(args)],
                                     total=feed.count(), empty="none recorded")


def dropped_around(ctx: ToolContext, args: dict) -> str:
    at, delta = anchor(ctx, args)
    minutes = args.get("minutes") or DEFAULT_DROPPED_MINUTES
    since, until = at - timedelta(minutes=minutes), at + timedelta(minutes=minutes, microseconds=1)
    refutations = list(deltas(ctx, {"kind": "engagement-attest"}, since=since, until=until)
                       .filter(content__startswith="refutes").order_by("created_at", "id"))
    dropped_ids = list(dict.fromkeys(t.removeprefix("refutes:") for r in refutations for t in r.tags
                                     if t.startswith("refutes:")))
    what = f"[{delta.id}]" if delta else at.strftime(TIME_FORMAT)
    if not dropped_ids:
        return f"nothing was dropped within {minutes} minutes of {what}"
    found = deltas(ctx, {}).in_bulk(dropped_ids)
    lines = [f"dropped within {minutes} minutes of {what} ({len(dropped_ids)} delta(s)):"]
    for dropped_id in dropped_ids[: limit_of(args)]:
        when = [r.created_at.strftime(TIME_FORMAT) for r in refutations if f"refutes:{dropped_id}" in r.tags]
        fires = sorted({t for r in refutations if f"refutes:{dropped_id}" in r.tags for t in r.tags
                        if t.startswith("fire:")})
        lines.append(f"- [{dropped_id}] dropped at {', '.join(when)} by {', '.join(fires) or 'an unknown fire'}")
        if dropped_id in found:
            lines.append(f"    {found[dropped_id].content.strip()}")
    return "\n".join(lines)


def cited_by(ctx: ToolContext, args: dict) -> str:
    delta = resolve(ctx, args["delta_id"])
    attests = list(deltas(ctx, {"kind": "engagement-attest"}).filter(tags__contains=[f"affirms:{delta.id}"])
                   .order_by("created_at", "id"))
    fire_tags = sorted({t for a in attests for t in a.tags if t.startswith("fire:")})
    cards = deltas(ctx, {"kind": "card"}).filter(tags__overlap=fire_tags).order_by("created_at", "id") \
        if fire_tags else []
    containers = deltas(ctx, {}).filter(tags__contains=[f"from:{delta.id}"]).order_by("created_at", "id")
    parts = [f"[{delta.id}] was cited by {len(attests)} fire(s)",
             listing("the cards that cited it", cards, empty="none"),
             listing("provenance and Q/A markers containing it", containers, empty="none")]
    return "\n\n".join(parts)


def link(ctx: ToolContext, args: dict) -> str:
    a, b = resolve(ctx, args["delta_id"]), resolve(ctx, args["other_id"])
    if a.id == b.id:
        raise ToolError("delta_id and other_id are the same delta")
    lines = [f"what links [{a.id}] and [{b.id}]:"]
    apart = abs(a.created_at - b.created_at)
    lines.append(f"- time: {_duration(apart)} apart ({a.created_at.strftime(TIME_FORMAT)} and "
                 f"{b.created_at.strftime(TIME_FORMAT)})")
    shared = sorted(set(a.tags) & set(b.tags))
    lines.append(f"- shared tags: {', '.join(shared) or 'none'}")
    direct = [f"[{x.id}] {t}" for x, y in ((a, b), (b, a)) for t in x.tags if t.endswith(f":{y.id}")]
    lines.append(f"- direct references: {'; '.join(direct) or 'none'}")
    above_a = {p.delta.id: p.delta for p in provenance_parents(workspace=ctx.workspace, delta_ids=[a.id])}
    above_b = {p.delta.id for p in provenance_parents(workspace=ctx.workspace, delta_ids=[b.id])}
    common = [above_a[i] for i in sorted(above_a.keys() & above_b)]
    lines.append("- provenance containing both: " + (", ".join(f"[{p.id}] L{p.level} {p.title}" for p in common)
                                                      or "none"))
    cofires = _fires_citing(ctx, a.id) & _fires_citing(ctx, b.id)
    lines.append(f"- cited together by: {', '.join(sorted(cofires)) or 'no fire'}")
    return "\n".join(lines)


def _fires_citing(ctx: ToolContext, delta_id: str) -> set[str]:
    tags = deltas(ctx, {"kind": "engagement-attest"}).filter(tags__contains=[f"affirms:{delta_id}"]) \
        .values_list("tags", flat=True)
    return {t for row in tags for t in row if t.startswith("fire:")}


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}s"
    return f"{seconds} seconds"


TOOL = lens(name="relate", description="Engagement and relations: what involves a contact, how a delta (or the "
                                       "feed) was engaged with, what was dropped around a moment, who cited a "
                                       "delta, what links two deltas.", actions=[
    Action("with_contact", "the deltas involving a person or agent (contact:<name> tag, or that source)",
           with_contact, ("contact",), ("since", "until", "days", "kind", "tags", "limit")),
    Action("engagement", "for a delta: its citations, drops and feed engagement; without one: the window's "
           f"engagement:more/less (default last {DEFAULT_ENGAGEMENT_DAYS} days)", engagement, (),
           ("delta_id", "days", "since", "until", "limit")),
    Action("dropped_around", "what fires dropped (refuted) within ±minutes (default a day) of a delta or a moment",
           dropped_around, (), ("delta_id", "at", "minutes", "limit")),
    Action("cited_by", "the fires' cards that cited a delta, and the provenance containing it", cited_by,
           ("delta_id",)),
    Action("link", "what links two deltas: time apart, shared tags, direct references, provenance containing "
           "both, fires citing both", link, ("delta_id", "other_id")),
])
