"""The per-fire writes (seed 000's "self-constituting writes"), each exactly once per fire.

They happen in one transaction together with the fire's move to the review phase, guarded by
`writes_done_at`: a fire resumed after a crash either finds them all written or none. The session
sees the answer here too (AssistantOutput), its single message is addressed by the respond, and a
Sit round's next_prompt seeds the next round."""

from django.db import transaction
from django.utils import timezone

from harness.fires.models import Fire
from harness.runtime.events import event_emit
from harness.runtime.models import SessionEvent


def fire_writes(fire: Fire) -> None:
    with transaction.atomic():
        locked = Fire.objects.select_for_update().get(pk=fire.pk)
        if locked.writes_done_at is None:
            written = lake_writes(fire)
            if fire.session_id and fire.depth == 0:
                _session_output(fire, written)
            fire.writes, fire.writes_done_at = written, timezone.now()
        else:
            fire.writes, fire.writes_done_at = locked.writes, locked.writes_done_at
        fire.phase = Fire.Phase.REVIEW
        fire.save(update_fields=["writes", "writes_done_at", "phase"])


def lake_writes(fire: Fire) -> dict:
    """The card, attestation, mood shift, engagement attests, Q/A marker; judge axes in the
    background. Returns the ids written, by kind. (Written once the lake is installed.)"""
    return {}


def _session_output(fire: Fire, written: dict) -> None:
    from harness.runtime.services import message_mark_addressed, message_send

    response = fire.response
    event_emit(session_id=fire.session_id, workspace_id=fire.workspace_id, kind=SessionEvent.Kind.ASSISTANT_OUTPUT,
               turn=fire.turn, data={"fire_id": str(fire.pk), "body": response.get("body", ""),
                                     "cards": response.get("cards", []), "cited_ids": response.get("cited_ids", []),
                                     "card_id": written.get("card"), "stop_reason": fire.stop_reason})
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
                     payload={"sit": {"round": sit["round"] + 1, "cap": sit["cap"], "fire_id": str(fire.pk)}})


