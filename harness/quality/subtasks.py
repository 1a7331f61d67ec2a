"""Parallel subtasks (seed 001's subtask DAG): a layer of the selected plan's subtasks marked parallel
runs as child fires, a Celery group on the fires queue, before the parent's main pass.

A layer is a run of two or more consecutive subtasks marked parallel (a lone parallel subtask has
nothing to run beside, and stays a step of the main loop like the others). The parent dispatches its
first unanswered layer and parks, as it does for its verifier chord; each child fire (introspective,
depth 1, spawned_by `subtask:<run>:<step>`, so a redelivered task finds the child it made) answers
its subtask with harness_subtask_start / harness_subtask_done around it; the chord's callback
records the children's answers on the run and ticks the parent's session, which dispatches the next
layer or goes on to the main pass, whose prompt carries the answers. The plan board shows the
layer's steps done.

Model calls: each child fire is a fire of its own (its main loop and review pass, no quality
harness: child fires run without it)."""

import uuid

from celery import chord, group, signature
from django.utils import timezone

from fathom import outbox
from fathom.llm import Message
from harness.fires.models import Fire
from harness.quality.models import QualityRun

ANSWER_CHARS = 4000  # of each child's answer, in the parent's prompt


def layers(plan: dict) -> list[list[int]]:
    """The plan's parallel layers, as lists of their 1-based step numbers."""
    found, current = [], []
    for step, subtask in enumerate(plan.get("subtasks") or [], 1):
        if subtask.get("parallel"):
            current.append(step)
            continue
        if len(current) > 1:
            found.append(current)
        current = []
    if len(current) > 1:
        found.append(current)
    return found


def next_layer(run: QualityRun) -> list[int]:
    """The first layer without its answers ([] when every layer has them, or the plan has none)."""
    answered = run.plan.get("subtask_answers") or {}
    return next((layer for layer in layers(run.plan.get("plan") or {})
                 if any(str(step) not in answered for step in layer)), [])


def spawn_key(run_id, step: int) -> str:
    return f"subtask:{run_id}:{step}"


def dispatch(fire: Fire, run: QualityRun) -> bool:
    """Send the next layer's children (in the caller's transaction; the chord goes after commit) and
    mark the run waiting for them. False when no layer is left."""
    layer = next_layer(run)
    if not layer:
        return False
    token = uuid.uuid4().hex
    run.waiting_for, run.waiting_token, run.waiting_since = "subtasks", token, timezone.now()
    run.save(update_fields=["waiting_for", "waiting_token", "waiting_since"])
    send(run_id=run.pk, steps=layer, token=token)
    return True


def send(*, run_id, steps: list[int], token: str) -> None:
    header = group(signature("fires.subtask_fire", args=[run_id, step, token]) for step in steps)
    callback = signature("fires.subtasks_join", args=[run_id, token])
    outbox.enqueue(chord(header, callback))


def board_mark_done(fire: Fire, run: QualityRun) -> None:
    """The answered parallel steps are done on the fire's plan board (their events came from the
    children's tasks)."""
    answered = run.plan.get("subtask_answers") or {}
    changed = False
    for step in fire.plan:
        if str(step["step"]) in answered and step["status"] != "done":
            step["status"], changed = "done", True
    if changed:
        fire.save(update_fields=["plan"])


def cited_ids(run: QualityRun) -> set[str]:
    """The ids the children cited: returned to the parent through their answers."""
    return {str(i) for answer in (run.plan.get("subtask_answers") or {}).values() for i in answer.get("cited_ids") or []}


def answers_message(run: QualityRun) -> Message | None:
    """The children's answers, as the main pass reads them."""
    answered = run.plan.get("subtask_answers") or {}
    if not answered:
        return None
    parts = []
    for step in sorted(answered, key=int):
        answer = answered[step]
        body = answer.get("body") or f"(the subtask's fire ended {answer.get('status')}: {answer.get('error', '')})"
        parts.append(f"## {step}. {answer.get('title', '')}\n{body[:ANSWER_CHARS]}")
    return Message.note("the plan's parallel subtasks were answered by child fires; use their answers:\n\n"
                        + "\n\n".join(parts))
