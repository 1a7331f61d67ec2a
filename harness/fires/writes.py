"""The per-fire writes (seed 000's "self-constituting writes"), each exactly once per fire.

They happen in one transaction together with the fire's move to the review phase, guarded by
`writes_done_at`: a fire resumed after a crash either finds them all written or none. The session
sees the answer here too (AssistantOutput), its single message is addressed by the respond, and a
Sit round's next_prompt seeds the next round."""

import jsonschema
from django.db import transaction
from django.utils import timezone

from fathom import outbox
from harness.fires.models import Fire
from harness.fires.selectors import fire_returned_ids
from harness.fires.tools.respond import MOOD_SHIFT
from harness.runtime.events import event_emit
from harness.runtime.models import SessionEvent, Trigger
from harness.runtime.services import message_mark_addressed, message_send
from lake.models import QA_MARKER_TAG, Delta
from lake.services import deltas_create, provenance_create

ARTIFACT_KINDS = ("insight", "recommendation", "document")
# What a degraded answer would assert, so is not written (docs/quality.md, "Degraded answers").
WITHHELD_WHEN_DEGRADED = ("card", "artifacts", "affirms", "refutes", "qa_marker")


def fire_writes(fire: Fire, *, shown: set[str] = frozenset()) -> None:
    """The per-fire writes, once; `shown`: the ids the lifecycle hooks showed the fire besides its tool
    results (harness.fires.hooks.FireHooks.ids_shown)."""
    with transaction.atomic(savepoint=False):  # or as part of the caller's (the harness's acceptance)
        locked = Fire.objects.select_for_update().get(pk=fire.pk)
        if locked.writes_done_at is None:
            written = lake_writes(fire, shown=shown)
            if fire.session_id and fire.depth == 0:
                _session_output(fire, written)
            fire.writes, fire.writes_done_at = written, timezone.now()
        else:
            fire.writes, fire.writes_done_at = locked.writes, locked.writes_done_at
        fire.phase = Fire.Phase.REVIEW
        fire.save(update_fields=["writes", "writes_done_at", "phase"])


def lake_writes(fire: Fire, *, shown: set[str] = frozenset()) -> dict:
    """The card (addressed-tagged), kind:standpoint-attestation, kind:mood-shift, the kind:directive the
    respond named (if any), the answer's artifacts (kind:insight / recommendation / document, tagged
    cites:<id>), one kind:engagement-attest per cited (affirms) and dropped (refutes) id, the Q/A marker
    (level 0 over the cited moments, with its centroid), and kind:judge-axes queued for the background.
    Returns the ids written, by kind.

    An id is named (cites, affirms, refutes, the marker's children) only when the fire saw it: it is in
    this workspace's lake and was returned to this fire by a tool, or shown to it by a hook (`shown`).
    A degraded answer (fire.verdict) asserts nothing: its card, artifacts, engagements and Q/A marker
    are not written (`withheld` lists them); what the fire says of itself (attestation, mood shift,
    directive) is."""
    response = fire.response
    degraded = fire.verdict == Fire.Verdict.DEGRADED
    common = [f"fire:{fire.pk}", f"mode:{fire.mode}"] + ([fire.session.tag] if fire.session_id else [])
    common += ["autonomous", f"autonomy-decision:{fire.autonomous}"] if fire.autonomous else []
    source = "harness-introspect" if fire.mode == Fire.Mode.INTROSPECTIVE else "harness"
    seen = {} if degraded else _seen(fire, response, shown)
    kinds, items = [], []
    if not degraded:
        for kind, item in _asserting_items(fire, seen, common, source):
            kinds.append(kind)
            items.append(item)
    if response.get("attestation"):
        items.append(_attestation_item(response["attestation"], common, source))
        kinds.append("attestation")
    if mood := response.get("mood_shift"):
        items.append(_mood_item(mood, common, source))
        kinds.append("mood_shift")
    if response.get("directive"):
        items.append({"content": response["directive"], "tags": ["kind:directive", *common], "source": source})
        kinds.append("directive")
    deltas = deltas_create(workspace=fire.workspace, items=items,
                           idempotency_key=f"fire-writes:{fire.pk}").deltas if items else []
    written: dict = {"affirms": [], "refutes": []}
    for kind, delta in zip(kinds, deltas, strict=True):
        if kind in ("affirms", "refutes", "artifacts"):
            written.setdefault(kind, [])
            written[kind].append(delta.pk)
        else:
            written[kind] = delta.pk
    moments = [i for i in response.get("cited_ids", []) if i in seen and not seen[i].is_provenance]
    question = asked(fire)
    if moments and question:
        marker = provenance_create(
            workspace=fire.workspace, title=_one_line(question, 200), child_ids=moments, level=0,
            content=f"Q: {question}\n\nA: {response['body']}", tags=[QA_MARKER_TAG, *common], source=source)
        written["qa_marker"] = marker.pk
    if degraded:
        written["withheld"] = list(WITHHELD_WHEN_DEGRADED)
    _judge_axes_enqueue(fire)
    written["judge_axes"] = "queued"
    return written


def asked(fire: Fire) -> str:
    """What someone asked the fire: its messages but the notes of machine triggers (a heartbeat, a
    cron, a task done), which are no question; "" when only those woke it (no Q/A marker then)."""
    messages = fire.work_set.get("messages") or [{"content": fire.question}]
    return "\n\n".join(m["content"] for m in messages if m.get("source") not in Trigger.MACHINE_KINDS).strip()


def _asserting_items(fire: Fire, seen: dict[str, Delta], common: list, source: str):
    """(kind, item) of what the answer asserts, but its Q/A marker: the card (addressed-tagged), the
    artifacts (seed 001), the engagements with the ids the fire saw."""
    response = fire.response
    addressed = [f"addressed:{m['id']}" for m in fire.work_set.get("messages", []) if m.get("id")]
    introspect = ["introspect-self"] if fire.mode == Fire.Mode.INTROSPECTIVE else []
    yield "card", {"content": response["body"], "tags": ["kind:card", *common, *addressed, *introspect],
                   "source": source}
    for card in response.get("cards") or []:
        if card.get("kind") in ARTIFACT_KINDS:
            cited = {c["id"] for c in card.get("citations") or [] if isinstance(c, dict) and c.get("id")}
            yield "artifacts", {"content": card["body"], "source": source, "tags": [
                f"kind:{card['kind']}", *common, *(f"cites:{i}" for i in sorted(cited & seen.keys()))]}
    for verb, key in (("affirms", "cited_ids"), ("refutes", "dropped_ids")):
        for delta_id in response.get(key, []):
            if delta_id in seen:
                yield verb, {"content": f"{verb} {delta_id}", "source": source,
                             "tags": ["kind:engagement-attest", f"{verb}:{delta_id}", *common]}


def _seen(fire: Fire, response: dict, shown: set[str]) -> dict[str, Delta]:
    """The deltas the answer names that the fire saw (returned by its tools, or shown by a hook), by id."""
    named = {str(i) for key in ("cited_ids", "dropped_ids") for i in response.get(key) or []}
    named |= {str(c["id"]) for card in response.get("cards") or [] for c in card.get("citations") or []
              if isinstance(c, dict) and c.get("id")}
    if not named:
        return {}
    returned = fire_returned_ids(fire=fire) | set(shown)
    return Delta.objects.filter(workspace_id=fire.workspace_id, pk__in=named & returned).in_bulk()


def review_writes(fire: Fire, calls) -> dict:
    """Standpoint and mood every fire (seed 000): what the answer left out, the review pass's call
    supplies (its `attestation` / `mood_shift` arguments), written once like the other writes. An
    argument that does not validate, or a review that gave none, leaves it unwritten."""
    missing = [key for key in ("attestation", "mood_shift") if not fire.response.get(key)]
    if not missing or not fire.writes.get("card"):
        return {}
    supplied = {}
    for call in calls:
        for key in missing:
            value = call.arguments.get(key) if call.ok and isinstance(call.arguments, dict) else None
            if value and key not in supplied and _valid(key, value):
                supplied[key] = value
    if not supplied:
        return {}
    common = [f"fire:{fire.pk}", f"mode:{fire.mode}", "supplied-by:review"] + (
        [fire.session.tag] if fire.session_id else [])
    common += ["autonomous", f"autonomy-decision:{fire.autonomous}"] if fire.autonomous else []
    source = "harness-introspect" if fire.mode == Fire.Mode.INTROSPECTIVE else "harness"
    kinds = list(supplied)
    items = [_attestation_item(supplied[k], common, source) if k == "attestation" else _mood_item(supplied[k], common,
                                                                                                   source)
             for k in kinds]
    deltas = deltas_create(workspace=fire.workspace, items=items, idempotency_key=f"fire-review-writes:{fire.pk}").deltas
    return {kind: delta.pk for kind, delta in zip(kinds, deltas, strict=True)}


def _valid(key: str, value) -> bool:
    if key == "attestation":
        return isinstance(value, str) and bool(value.strip())
    return jsonschema.Draft202012Validator(MOOD_SHIFT).is_valid(value)


def _attestation_item(text: str, common: list, source: str) -> dict:
    return {"content": text.strip(), "tags": ["kind:standpoint-attestation", *common], "source": source}


def _mood_item(mood: dict, common: list, source: str) -> dict:
    return {"content": f"{mood['direction']}{mood['magnitude']} {mood['axis']}: {mood.get('reason', '')}",
            "tags": ["kind:mood-shift", f"axis:{mood['axis']}", f"direction:{mood['direction']}", *common],
            "source": source}


def _judge_axes_enqueue(fire: Fire) -> None:
    outbox.enqueue("quality.fire_judge_axes", args=[str(fire.pk)])


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _session_output(fire: Fire, written: dict) -> None:
    response = fire.response
    event_emit(session_id=fire.session_id, workspace_id=fire.workspace_id, kind=SessionEvent.Kind.ASSISTANT_OUTPUT,
               turn_id=fire.turn_id, data={"fire_id": str(fire.pk), "body": response.get("body", ""),
                                     "cards": response.get("cards", []), "cited_ids": response.get("cited_ids", []),
                                     "card_id": written.get("card"), "stop_reason": fire.stop_reason,
                                     "verdict": fire.verdict_detail})
    messages = fire.work_set.get("messages", [])
    ids = [m["id"] for m in messages if m.get("id")]
    # The respond answers a lone message; with several, the model ticks them off itself, and the
    # ones it left fire again. A Sit's prompt is always answered by the round's respond.
    answered = ids if len(ids) == 1 else [m["id"] for m in messages if m.get("id") and m.get("source") == "sit"]
    for message_id in answered:
        message_mark_addressed(session_id=fire.session_id, trigger_id=message_id, note="answered by respond")
    sit = next((m.get("sit") for m in messages if m.get("sit")), None)
    next_prompt = response.get("next_prompt", "")
    if sit and next_prompt and sit["round"] < sit["cap"]:
        message_send(session=fire.session, content=next_prompt, author="self", source="sit",
                     payload={"sit": {**sit, "round": sit["round"] + 1, "fire_id": str(fire.pk)}})


