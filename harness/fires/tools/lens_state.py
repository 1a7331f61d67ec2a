"""state(action, ...): current attention (seed 000's state lens): the intents still open, proposals
waiting for a decision, the mood and its drift, the crystal (the current orient and what recent
fires attested about Fathom itself), and the most recent deltas."""

import re
from collections import defaultdict

from harness.fires.tools.base import ToolContext
from harness.fires.tools.lenses import TIME_FORMAT, Action, deltas, lens, limit_of, listing, span_text, window
from harness.runtime.models import Trigger
from lake.selectors import orient_current
from proposals.models import ProposalStatus
from proposals.selectors import pending_first, proposals_list

DEFAULT_MOOD_DAYS = 7
ATTESTATIONS_SHOWN = 5
_MAGNITUDE = re.compile(r"^([+-])(\d+(?:\.\d+)?)")


def pending_intents(ctx: ToolContext, args: dict) -> str:
    fire = ctx.fire
    mine = {str(m["id"]) for m in fire.work_set.get("messages", []) if m.get("id")}
    if fire.session_id is None:
        lines = [f"- {m['content']}" for m in fire.work_set.get("messages", [])]
        return "this fire has no session; its question:\n" + "\n".join(lines)
    open_messages = list(Trigger.objects.filter(
        session_id=fire.session_id, kind=Trigger.Kind.USER_MESSAGE, addressed=False, given_up_at__isnull=True,
    ).order_by("created_at", "id")[: limit_of(args)])
    if not open_messages:
        return "no unaddressed messages in this session"
    lines = [f"unaddressed messages of this session ({len(open_messages)}, oldest first):"]
    for message in open_messages:
        if str(message.pk) in mine:
            notes = ["in this fire"]
        else:
            notes = ["waiting for the next turn" if message.state == Trigger.State.QUEUED else "taken up earlier"]
        if message.refires:
            notes.append(f"taken up {message.refires} time(s) before")
        lines.append(f"- [{message.pk}] {message.created_at.strftime(TIME_FORMAT)} {message.author or 'user'} "
                     f"({', '.join(notes)}): {message.content}")
    return "\n".join(lines)


def proposals(ctx: ToolContext, args: dict) -> str:
    waiting = list(pending_first(proposals_list(workspace=ctx.workspace).filter(
        status__in=[ProposalStatus.PENDING, ProposalStatus.FAILED]))[: limit_of(args)])
    if not waiting:
        return "no proposals are waiting for a decision"
    lines = [f"proposals waiting for a decision ({len(waiting)}):"]
    for proposal in waiting:
        level = f" L{proposal.level}" if proposal.level is not None else ""
        failed = f" — failed: {proposal.failure_reason}" if proposal.status == ProposalStatus.FAILED else ""
        lines.append(f"- #{proposal.pk} {proposal.tool}{level} [{proposal.status}] {proposal.title} "
                     f"(by {proposal.producer}, {proposal.created_at.strftime(TIME_FORMAT)}){failed}")
    return "\n".join(lines)


def mood(ctx: ToolContext, args: dict) -> str:
    since, until = window(args, default_days=DEFAULT_MOOD_DAYS)
    shifts = list(deltas(ctx, {"kind": "mood-shift"}, since=since, until=until).order_by("created_at", "id"))
    if not shifts:
        return f"no mood shifts {span_text(since, until)}"
    drift: dict[str, float] = defaultdict(float)
    for shift in shifts:
        axis = next((t.removeprefix("axis:") for t in shift.tags if t.startswith("axis:")), "?")
        if match := _MAGNITUDE.match(shift.content):
            drift[axis] += float(match.group(2)) * (1 if match.group(1) == "+" else -1)
    lines = [f"mood {span_text(since, until)}: net drift per axis"]
    lines += [f"- {axis}: {value:+.2f}" for axis, value in sorted(drift.items(), key=lambda kv: -abs(kv[1]))]
    return "\n".join(lines) + "\n\n" + listing("the shifts, oldest first", shifts)


def crystal(ctx: ToolContext, args: dict) -> str:
    orient = orient_current(workspace=ctx.workspace, river=_river(ctx))
    parts = [listing("current orient", [orient] if orient else [], empty="none yet (orient_shift writes one)")]
    attestations = deltas(ctx, {"kind": "standpoint-attestation"}).order_by("-created_at", "-id")
    parts.append(listing("what recent fires attested about me, newest first", attestations[:ATTESTATIONS_SHOWN],
                         total=attestations.count(), empty="none yet"))
    return "\n\n".join(parts)


def recent(ctx: ToolContext, args: dict) -> str:
    river = _river(ctx) if args.get("river") else ""
    filters = {**args, "tags": [*(args.get("tags") or []), *([river] if river else [])]}
    since, until = window(args)
    queryset = deltas(ctx, filters, since=since, until=until).order_by("-created_at", "-id")
    where = f" in the river {river}" if river else ""
    return listing(f"most recent deltas{where}, newest first", queryset[: limit_of(args)], total=queryset.count(),
                   empty="the lake is empty" if not river else "nothing in this river yet")


def _river(ctx: ToolContext) -> str:
    return ctx.fire.session.tag if ctx.fire.session_id else ""


TOOL = lens(name="state", description="Current attention: unaddressed messages, proposals waiting, the mood and "
                                      "its drift, the crystal (current orient, self-attestations), the latest "
                                      "deltas.", actions=[
    Action("pending_intents", "the session's user messages not yet addressed (open threads)", pending_intents, (),
           ("limit",)),
    Action("proposals", "proposals waiting for an operator (pending, or failed and needing a look)", proposals, (),
           ("limit",)),
    Action("mood", f"the mood shifts of the window (default last {DEFAULT_MOOD_DAYS} days) and the net drift "
           "per axis", mood, (), ("days", "since", "until")),
    Action("crystal", "the current orient and the latest standpoint attestations", crystal),
    Action("recent", "the latest deltas; river=true for this conversation's only", recent, (),
           ("river", "kind", "tags", "since", "until", "limit")),
])
