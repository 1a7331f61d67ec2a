"""The parallel subtasks' tasks (harness.quality.subtasks), on the fires queue: a child fire per
subtask, and the chord's join. Apart from .subtasks because they run fires (harness.fires.services,
which imports the harness's hooks)."""

from django.db import transaction

from harness.fires.models import Fire
from harness.fires.services import fire_create, fire_run
from harness.fires.tools.introspect import CHILD_DISABLED
from harness.quality.events import emit, fire_resume
from harness.quality.models import QualityRun
from harness.quality.subtasks import next_layer, spawn_key


def subtask_fire_run(*, run_id, step: int) -> dict:
    """Make (once: keyed by spawned_by) and run the child fire of one subtask; its outcome. A child
    that another worker runs now is left to it (the join waits for it to end)."""
    run = QualityRun.objects.select_related("fire__workspace").get(pk=run_id)
    parent = run.fire
    subtasks = (run.plan.get("plan") or {}).get("subtasks") or []
    title = subtasks[step - 1]["title"]
    key = spawn_key(run.pk, step)
    child = Fire.objects.filter(spawned_by=key).first()
    if child is None:
        with transaction.atomic():
            child = fire_create(
                workspace=parent.workspace, mode=Fire.Mode.INTROSPECTIVE, parent=parent, spawned_by=key,
                question=f"{title}\n\n(One part of a larger question, answered in parallel with its other parts: "
                         f"{parent.question[:2000]})",
                disabled_tools=sorted(set(CHILD_DISABLED) | set(parent.disabled_tools)))
            emit(parent, run, "harness_subtask_start", {
                "subtask_index": step, "total_subtasks": len(subtasks), "title": title,
                "workflow_type": run.complexity.get("workflow_type", "chat"), "parallel": True,
                "child_fire_id": str(child.pk)}, runner=False)
    if not child.is_terminal:
        child = fire_run(fire=Fire.objects.select_related("session", "workspace").get(pk=child.pk))
        if child.is_terminal:
            emit(parent, run, "harness_subtask_done", {
                "subtask_index": step, "total_subtasks": len(subtasks), "is_last": step == len(subtasks),
                "artifacts_created": len([c for c in child.response.get("cards") or [] if c.get("kind")]),
                "child_fire_id": str(child.pk), "status": child.status}, runner=False)
    return {"fire_id": str(child.pk), "status": child.status}


def subtasks_join(*, run_id, token: str) -> bool:
    """The chord's callback: the layer's answers recorded on the run, and the parent's session ticked.
    False (nothing done) when the run no longer waits for this chord or a child has not ended."""
    with transaction.atomic():
        run = QualityRun.objects.select_for_update().select_related("fire").get(pk=run_id)
        if run.waiting_for != "subtasks" or run.waiting_token != token:
            return False
        layer = next_layer(run)
        subtasks = (run.plan.get("plan") or {}).get("subtasks") or []
        children = {child.spawned_by: child for child in Fire.objects.filter(
            spawned_by__in=[spawn_key(run.pk, step) for step in layer])}
        if len(children) < len(layer) or not all(child.is_terminal for child in children.values()):
            return False
        answers = dict(run.plan.get("subtask_answers") or {})
        for step in layer:
            child = children[spawn_key(run.pk, step)]
            answers[str(step)] = {"title": subtasks[step - 1]["title"], "fire_id": str(child.pk),
                                  "status": child.status, "body": child.response.get("body", ""),
                                  "cited_ids": child.response.get("cited_ids", []), "error": child.error[:500]}
        run.plan = {**run.plan, "subtask_answers": answers}
        run.waiting_for, run.waiting_token, run.waiting_since = "", "", None
        run.save(update_fields=["plan", "waiting_for", "waiting_token", "waiting_since"])
        fire_resume(session_id=run.fire.session_id, workspace_id=run.workspace_id, fire_id=run.fire_id)
    return True
