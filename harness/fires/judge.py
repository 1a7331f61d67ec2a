"""kind:judge-axes: a background judgement of a fire's answer on five axes (salience, novelty,
resonance, confidence, comfort), written once per fire: one call of role `judge` (the classifier's
model unless the judge has its own)."""

import json

from django.db import transaction

from fathom.llm import Message, complete
from harness.fires.models import Fire
from lake.models import Delta
from lake.services import deltas_create

AXES = ("salience", "novelty", "resonance", "confidence", "comfort")
SCHEMA = {"type": "json_schema", "json_schema": {"name": "judge_axes", "schema": {
    "type": "object", "additionalProperties": False, "required": list(AXES),
    "properties": {axis: {"type": "number", "minimum": 0, "maximum": 1} for axis in AXES}}}}


def fire_judge_axes(*, fire_id) -> str | None:
    """Write the fire's kind:judge-axes delta and name it in the fire's writes (where it was "queued"),
    in one transaction; a second run (a redelivered task) writes nothing."""
    fire = Fire.objects.select_related("workspace", "session").filter(pk=fire_id).first()
    if fire is None or not fire.response:
        return None
    tag = f"fire:{fire.pk}"
    done = Delta.objects.filter(workspace=fire.workspace, tags__contains=["kind:judge-axes", tag]).first()
    if done is not None:
        return done.pk
    completion = complete(workspace=fire.workspace, role="judge", response_format=SCHEMA, messages=[
        Message.system("Judge the answer on each axis from 0 to 1: salience (does it matter), novelty (is it new), "
                       "resonance (does it connect), confidence (is it supported), comfort (is it at ease)."),
        Message.user(f"Question: {fire.question}\n\nAnswer: {fire.response.get('body', '')}")])
    try:
        scores = {axis: float(completion.json().get(axis, 0)) for axis in AXES}
    except (ValueError, AttributeError):
        scores = dict.fromkeys(AXES, 0.0)
    common = [tag] + ([fire.session.tag] if fire.session_id else [])
    with transaction.atomic():
        written = deltas_create(workspace=fire.workspace, idempotency_key=f"judge-axes:{fire.pk}", items=[{
            "content": json.dumps(scores, sort_keys=True), "source": "harness",
            "tags": ["kind:judge-axes", *common, *(f"{axis}:{value:.2f}" for axis, value in scores.items())]}])
        judged = Fire.objects.select_for_update().get(pk=fire.pk)
        judged.writes = {**judged.writes, "judge_axes": written.deltas[0].pk}
        judged.save(update_fields=["writes"])
    return written.deltas[0].pk
