"""The quality harness's pre-flight (seed 001): before a wrapped fire's main loop, classify its question
(and, for COMPLEX, plan) once per fire, recorded as its QualityRun; the plan's subtasks become the
fire's plan board; a synthesis over many sources first waits for its specialist swarm (.swarm), a
plan with a layer of parallel subtasks for their child fires (.subtasks). As the fire works, its plan
board's moves become subtask events.

Model calls: classifier 1; planner 1 (COMPLEX only); the swarm's specialists N and its aggregator 1."""

from dataclasses import asdict

from django.db import transaction

from harness.fires.hooks import Park
from harness.fires.models import Fire
from harness.quality import agents, subtasks, swarm
from harness.quality.configuration import applies, quality_settings_get
from harness.quality.events import Step, emitting
from harness.quality.models import QualityAttempt, QualityRun
from harness.quality.plans import PlanSelector
from harness.quality.profile import workspace_profile
from harness.quality.run_state import FireQuality
from harness.quality.selectors import workspace_stats

MAX_ITERATIONS = 5


def preflight(state: FireQuality) -> Park | None:
    """The fire's QualityRun, made once (classifier call, recorded with its event) when the harness
    wraps the fire; Park while the fire waits for its swarm or its parallel subtasks."""
    fire, run = state.fire, state.run
    if run is None:
        if fire.depth or not fire.session_id:
            return None
        quality = quality_settings_get(workspace_id=fire.workspace_id, prompt="classifier_system",
                                       ids_for=(QualityRun, QualityAttempt), retry_policy=True)
        if not applies(fire, quality):
            return None
        complexity = agents.classify(workspace=fire.workspace, question=fire.question, system=quality.prompt)
        workflow = complexity["workflow_type"]
        # the run keeps the thresholds it was classified under: its retry policy and its contract's
        complexity["retry_policy"] = asdict(quality.retry_policy.for_workflow(workflow))
        if quality.contracts.get(workflow):
            complexity["workspace_contract"] = quality.contracts[workflow]
        selection = None
        if complexity["level"] == "COMPLEX":
            candidates = agents.plans_generate(workspace=fire.workspace, question=fire.question, complexity=complexity)
            selection = PlanSelector.select(candidates, query=fire.question, workflow_type=workflow,
                                            workspace_stats=workspace_stats(workspace=fire.workspace))
        sources = swarm.sources_find(fire, quality) if swarm.may_activate(workflow, quality, fire=fire) else []
        multiplier = workspace_profile(workspace_id=fire.workspace_id).quality_multiplier
        run = QualityRun(workspace_id=fire.workspace_id, fire=fire, complexity=complexity,
                         sources=[s["id"] for s in sources], iterations=iterations_asked(fire),
                         plan=selection.as_event() if selection else {}, profile={"quality_multiplier": multiplier})
        run.pk, attempt_pk = quality.new_ids
        attempt = QualityAttempt(pk=attempt_pk, workspace_id=fire.workspace_id, run=run, number=1, first_turn=0)
        # The run, its first attempt and its events: one statement, whose commit does not wait for the WAL
        # flush, as a verdict's: a crash of the database that forgets it leaves the fire before its
        # pre-flight, which its resume runs again (the classifier's and a COMPLEX question's planner's calls).
        with emitting(fire, run, durable=False) as step:
            step.create(run)
            step.create(attempt)
            step.emit("harness_complexity", {
                "level": complexity["level"], "reason": complexity["reason"],
                "subtask_count": complexity["subtask_count"], "workflow_type": workflow,
                "is_fallback": complexity["is_fallback"]})
            if selection is not None:
                _plan_board(step, selection.plan)
                step.emit("harness_plan_selected", {"plan": run.plan["plan"], "score": selection.score,
                                                          "candidates_count": selection.candidates_count})
            if swarm.should_activate(workflow, source_count=len(sources), settings=quality, fire=fire):
                swarm.dispatch(step, quality.specialists, sources)
        state.run, state.attempt = run, attempt
    if not run.waiting_for and subtasks.next_layer(run):  # a layer of parallel subtasks: child fires first
        with transaction.atomic():
            subtasks.dispatch(fire, run)
    if run.waiting_for:
        return Park(run.waiting_for)
    subtasks.board_mark_done(fire, run)
    return None


def iterations_asked(fire: Fire) -> int:
    """The deep-synthesis iterations a message of the fire asked for (at most MAX_ITERATIONS)."""
    asked = [m.get("iterations") for m in fire.work_set.get("messages", []) if isinstance(m.get("iterations"), int)]
    return max(1, min(MAX_ITERATIONS, max(asked, default=1)))


def _plan_board(step: Step, plan) -> None:
    """The selected plan's subtasks become the fire's plan board (the plan tool's checklist)."""
    fire = step.fire
    if plan.subtasks and not fire.plan:
        fire.plan = [{"step": n, "text": s.title, "status": "pending", "parallel": s.parallel}
                     for n, s in enumerate(plan.subtasks, 1)]
        step.changed(fire, "plan")


def plan_advanced(state: FireQuality, before: list[dict]) -> None:
    """harness_subtask_start / harness_subtask_done for the plan steps whose status the fire's last
    call moved (in its transaction). Only for fires the harness wraps."""
    fire, run = state.fire, state.run
    if run is None or not before or not fire.plan:
        return
    with emitting(fire, run) as step:
        _subtask_events(step, before)


def _subtask_events(step: Step, before: list[dict]) -> None:
    fire, run = step.fire, step.run
    was = {s["step"]: s["status"] for s in before}
    total = len(fire.plan)
    for item in fire.plan:
        previous = was.get(item["step"], "pending")
        if previous == item["status"]:
            continue
        if item["status"] == "in_flight":
            step.emit("harness_subtask_start", {
                "subtask_index": item["step"], "total_subtasks": total, "title": item["text"],
                "workflow_type": run.complexity.get("workflow_type", "chat"), "parallel": bool(item.get("parallel"))})
        elif item["status"] == "done":
            step.emit("harness_subtask_done", {
                "subtask_index": item["step"], "total_subtasks": total, "is_last": item["step"] == total,
                "artifacts_created": _artifacts_so_far(fire)})


def _artifacts_so_far(fire: Fire) -> int:
    return len([c for c in (fire.response or {}).get("cards") or [] if c.get("kind")])
