"""orient_shift(reason): the conversation revealed a broader shift in the operator's interests, so
the orient (the feed's standing direction, part of the crystal) is regenerated in the background.

The tool only enqueues `memory.orient_regenerate` (after its result commits); the task asks the
writer model for the new orient and writes it as a `kind:orient` delta, once per (fire, turn, call)."""

from fathom import outbox
from fathom.errors import ApplicationError
from fathom.llm import Message, complete
from harness.fires.models import Fire
from harness.fires.tools.base import Tool, ToolContext, register
from harness.runtime.models import Trigger
from lake.models import IdempotentWrite
from lake.selectors import deltas_list, orient_current
from lake.services import deltas_create

ENGAGEMENT_SHOWN = 20
ATTESTATIONS_SHOWN = 5
MESSAGES_SHOWN = 10
SYSTEM = ("You maintain the orient: a short paragraph, in the second person to the agent, naming what the "
          "operator is oriented toward now (interests rising, interests fading) so the feed and the next fires "
          "lean the right way. Start from the previous orient and change what the signals and the reason call "
          "for; answer with the new orient only.")


def run(ctx: ToolContext, args: dict):
    fire_id, key, reason = str(ctx.fire.pk), ctx.idempotency_key, args["reason"]
    outbox.enqueue("memory.orient_regenerate", args=[fire_id, key, reason])
    return "orient regeneration queued: the crystal updates shortly (state action=\"crystal\" shows it)"


def orient_regenerate(*, fire_id: str, key: str, reason: str) -> str | None:
    """Write the fire's session (or workspace) a new kind:orient delta; a second run for the same
    key (a redelivered task, a replayed call) writes nothing and returns the first one's id."""
    fire = Fire.objects.select_related("workspace", "session").filter(pk=fire_id).first()
    if fire is None:
        return None
    write_key = f"orient:{key}"
    done = IdempotentWrite.objects.filter(workspace=fire.workspace, key=write_key).first()
    if done is not None:
        return done.delta_ids[0] if done.delta_ids else None
    river = fire.session.tag if fire.session_id else ""
    previous = orient_current(workspace=fire.workspace, river=river)
    completion = complete(workspace=fire.workspace, role="writer", messages=[
        Message.system(SYSTEM), Message.user(_brief(fire, river, previous, reason))])
    text = completion.text.strip()
    if not text:
        raise ApplicationError("the writer returned an empty orient")
    tags = ["kind:orient", f"fire:{fire.pk}", *([river] if river else []),
            *([f"supersedes:{previous.id}"] if previous else [])]
    try:
        written = deltas_create(workspace=fire.workspace, idempotency_key=write_key,
                                items=[{"content": text, "tags": tags, "source": "harness-orient"}])
    except ApplicationError as exc:
        if exc.code != "idempotency_key_reused":  # a concurrent run wrote it first
            raise
        return IdempotentWrite.objects.get(workspace=fire.workspace, key=write_key).delta_ids[0]
    return written.deltas[0].id


def _brief(fire, river: str, previous, reason: str) -> str:
    engagement = deltas_list(workspace=fire.workspace).filter(
        tags__overlap=["engagement:more", "engagement:less"]).order_by("-created_at")[:ENGAGEMENT_SHOWN]
    attestations = deltas_list(workspace=fire.workspace, kind="standpoint-attestation").order_by(
        "-created_at")[:ATTESTATIONS_SHOWN]
    messages = [m["content"] for m in fire.work_set.get("messages", [])]
    if fire.session_id:
        messages = list(Trigger.objects.filter(session_id=fire.session_id, kind=Trigger.Kind.USER_MESSAGE)
                        .order_by("-created_at").values_list("content", flat=True)[:MESSAGES_SHOWN])[::-1]

    def lines(rows):
        return "\n".join(f"- {row}" for row in rows) or "- none"

    feed = [f"{'more' if 'engagement:more' in d.tags else 'less'}: {d.content}" for d in engagement]
    return "\n\n".join([
        f"Why the orient shifts now: {reason}",
        f"Previous orient:\n{previous.content if previous else '(none yet)'}",
        f"Recent feed preferences:\n{lines(feed)}",
        f"What recent fires attested:\n{lines(d.content for d in attestations)}",
        f"The conversation{f' ({river})' if river else ''}, latest messages:\n{lines(messages)}",
    ])


TOOL = register(Tool(
    name="orient_shift",
    description="The conversation revealed a broader shift in the operator's interests: regenerate the orient "
                "(the feed's standing direction) in the background. Give the reason.",
    run=run,
    parameters={"type": "object", "required": ["reason"], "additionalProperties": False, "properties": {
        "reason": {"type": "string", "minLength": 1},
    }},
))
