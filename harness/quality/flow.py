"""The quality harness around a fire (seed 001), as the hooks harness.fires.loop calls:

    preflight            before the main loop: classify (and, for COMPLEX, plan) once per fire,
                         recorded as its QualityRun; the plan's subtasks become the plan board;
                         a synthesis over many sources may first park for its swarm (.swarm),
                         a plan with a layer of parallel subtasks for its child fires (.subtasks)
    preamble             what the main loop adds to its prompt: the contract's requirements
                         (get_quality_preamble), the plan's modifier, the swarm's brief, and for a
                         retry the earlier attempts' turns and the healing prompt
    phase_after_respond  an answer goes to post-flight (phase verify) instead of the writes
    postflight           the contract (here, deterministic) and the verifier group (on the quality
                         worker, as a Celery chord): the fire records what it waits for and raises
                         Parked, ending its task; the chord's callback ticks it again; resumed, it
                         decides: accept (the best attempt becomes the answer, phase writes) or retry
                         (a new attempt of the same fire, phase main; every attempt when the message
                         asked for deep-synthesis iterations)

It wraps the top-level fires of sessions (reactive, Sit rounds) of workspaces whose QualitySettings
are enabled; introspective fires (Fathom calling itself) and child fires run without it.

Model calls per fire: classifier 1; planner 1 (COMPLEX only); verifier 1 per attempt, or 3 with
contrastive verification (COMPLEX synthesis, full_pipeline, recommendation); specialists N and the
aggregator 1 when the swarm runs; a layer of parallel subtasks runs as child fires (.subtasks), each
making its own fire's calls (main and review pass, no harness)."""

import json
import logging
import re
import uuid
from datetime import timedelta

from celery import chord, group, signature
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.db.models.expressions import RawSQL
from django.utils import timezone

from fathom.llm import Message
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.quality import agents, subtasks, swarm
from harness.quality.contracts import (
    ArtifactCounts,
    Citation,
    CitationCheck,
    ContractEvaluator,
    ContractResult,
    ExpectedOutput,
    WorkflowContract,
    citations_check,
    workflow_type_of,
)
from harness.quality.events import emit, emitting, fire_resume
from harness.quality.metrics import context_metrics
from harness.quality.models import Feedback, QualityAttempt, QualityRetryPolicy, QualityRun, QualitySettings
from harness.quality.plans import PlanSelector
from harness.quality.profile import milestone_crossed, profile_build, profile_cached, profile_invalidate
from harness.quality.retry import (
    DEFAULT_RETRY_SETTINGS,
    FailureAnalyzer,
    RetryPolicy,
    RetrySettings,
    combined_score,
)
from harness.quality.scores import EVENTS_BY_WORKFLOW, quality_scores
from harness.quality.selectors import fire_tool_result_sizes, workspace_stats
from harness.quality.stream import StreamMonitor
from lake.models import Delta

logger = logging.getLogger(__name__)

CONTRASTIVE_WORKFLOWS = ("synthesis", "full_pipeline", "recommendation")
SOURCE_COUNTED_WORKFLOWS = ("synthesis", "full_pipeline")  # their min_insights follow the source count
MAX_ITERATIONS = 5
PROFILE_WINDOW = 500  # the most recent runs whose scores and issues the profile reads
DELTA_ID = re.compile(r"\b[0-9a-f]{16}\b")


class Parked(Exception):
    """The fire waits for the quality worker (its verifier group, or its swarm): its task ends here,
    and the chord's callback ticks it again."""


# --- settings -----------------------------------------------------------------------------------------------

def quality_settings_get(*, workspace_id) -> QualitySettings:
    """The workspace's quality settings (a row is created on first use, enabled as
    FATHOM_QUALITY_DEFAULT_ENABLED says)."""
    return QualitySettings.objects.get_or_create(
        workspace_id=workspace_id, defaults={"enabled": settings.FATHOM_QUALITY_DEFAULT_ENABLED})[0]


def retry_policy_get(*, workspace_id) -> RetryPolicy:
    """The workspace's retry policy: its rows (created with the seed's defaults on first use), edited in
    admin."""
    rows = {row.workflow_type: row for row in QualityRetryPolicy.objects.filter(workspace_id=workspace_id)}
    missing = [QualityRetryPolicy(workspace_id=workspace_id, workflow_type=str(workflow),
                                  max_attempts=values.max_attempts, good_enough_score=values.good_enough_score,
                                  low_quality_threshold=values.low_quality_threshold)
               for workflow, values in DEFAULT_RETRY_SETTINGS.items()
               if str(workflow) in dict(QualityRetryPolicy._meta.get_field("workflow_type").choices)
               and str(workflow) not in rows]
    if missing:
        QualityRetryPolicy.objects.bulk_create(missing, ignore_conflicts=True)
        rows.update({row.workflow_type: row for row in missing})
    return RetryPolicy(settings={name: RetrySettings(row.max_attempts, row.good_enough_score,
                                                     row.low_quality_threshold) for name, row in rows.items()})


def applies(fire: Fire, quality: QualitySettings) -> bool:
    return fire.depth == 0 and bool(fire.session_id) and quality.enabled


# --- pre-flight -----------------------------------------------------------------------------------------------

def preflight(fire: Fire) -> QualityRun | None:
    """The fire's QualityRun, made once (classifier call, recorded with its event); None when the
    harness does not wrap this fire. Raises Parked while the fire waits for its swarm."""
    run = run_of(fire)
    if run is None:
        if fire.depth or not fire.session_id:
            return None
        quality = quality_settings_get(workspace_id=fire.workspace_id)
        if not applies(fire, quality):
            return None
        complexity = agents.classify(workspace=fire.workspace, question=fire.question)
        workflow = complexity["workflow_type"]
        selection = None
        if complexity["level"] == "COMPLEX":
            candidates = agents.plans_generate(workspace=fire.workspace, question=fire.question, complexity=complexity)
            selection = PlanSelector.select(candidates, query=fire.question, workflow_type=workflow,
                                            workspace_stats=workspace_stats(workspace=fire.workspace))
        sources = swarm.sources_find(fire, quality) if swarm.may_activate(workflow, quality) else []
        multiplier = workspace_profile(workspace_id=fire.workspace_id).quality_multiplier
        with transaction.atomic():
            run = QualityRun.objects.create(
                workspace_id=fire.workspace_id, fire=fire, complexity=complexity, sources=[s["id"] for s in sources],
                iterations=iterations_asked(fire),
                plan=selection.as_event() if selection else {}, profile={"quality_multiplier": multiplier})
            run._current_attempt = QualityAttempt.objects.create(workspace_id=fire.workspace_id, run=run, number=1,
                                                                 first_turn=0)
            with emitting(fire, run):
                emit(fire, run, "harness_complexity", {
                    "level": complexity["level"], "reason": complexity["reason"],
                    "subtask_count": complexity["subtask_count"], "workflow_type": workflow,
                    "is_fallback": complexity["is_fallback"]})
                if selection is not None:
                    _plan_board(fire, selection.plan)
                    emit(fire, run, "harness_plan_selected", {"plan": run.plan["plan"], "score": selection.score,
                                                              "candidates_count": selection.candidates_count})
                if swarm.should_activate(workflow, source_count=len(sources), settings=quality):
                    swarm.dispatch(fire, run, quality.specialists, sources)
        fire._quality_run = run
    if not run.waiting_for and subtasks.next_layer(run):  # a layer of parallel subtasks: child fires first
        with transaction.atomic():
            subtasks.dispatch(fire, run)
    if run.waiting_for:
        raise Parked(run.waiting_for)
    subtasks.board_mark_done(fire, run)
    return run


def iterations_asked(fire: Fire) -> int:
    """The deep-synthesis iterations a message of the fire asked for (at most MAX_ITERATIONS)."""
    asked = [m.get("iterations") for m in fire.work_set.get("messages", []) if isinstance(m.get("iterations"), int)]
    return max(1, min(MAX_ITERATIONS, max(asked, default=1)))


def _plan_board(fire: Fire, plan) -> None:
    """The selected plan's subtasks become the fire's plan board (the plan tool's checklist)."""
    if plan.subtasks and not fire.plan:
        fire.plan = [{"step": n, "text": s.title, "status": "pending", "parallel": s.parallel}
                     for n, s in enumerate(plan.subtasks, 1)]
        fire.save(update_fields=["plan"])


def subtasks_advanced(fire: Fire, before: list[dict]) -> None:
    """harness_subtask_start / harness_subtask_done for the plan steps whose status the fire's last
    call moved (in its transaction). Only for fires the harness wraps."""
    if not before or not fire.plan:
        return
    run = run_of(fire)
    if run is None:
        return
    with emitting(fire, run):
        _subtask_events(fire, run, before)


def _subtask_events(fire: Fire, run: QualityRun, before: list[dict]) -> None:
    was = {s["step"]: s["status"] for s in before}
    total = len(fire.plan)
    for step in fire.plan:
        previous = was.get(step["step"], "pending")
        if previous == step["status"]:
            continue
        if step["status"] == "in_flight":
            emit(fire, run, "harness_subtask_start", {
                "subtask_index": step["step"], "total_subtasks": total, "title": step["text"],
                "workflow_type": run.complexity.get("workflow_type", "chat"), "parallel": bool(step.get("parallel"))})
        elif step["status"] == "done":
            emit(fire, run, "harness_subtask_done", {
                "subtask_index": step["step"], "total_subtasks": total, "is_last": step["step"] == total,
                "artifacts_created": _artifacts_so_far(fire)})


def _artifacts_so_far(fire: Fire) -> int:
    return len([c for c in (fire.response or {}).get("cards") or [] if c.get("kind")])


def preamble(fire: Fire, run: QualityRun | None, base: list, *, earlier: list) -> list:
    """The main loop's preamble with the harness's additions: the quality requirements in the system
    message; for a retry, the earlier attempts' turns (`earlier`, rendered) and the healing prompt."""
    if run is None:
        return base
    additions = [get_quality_preamble(fire, run)]
    plan = run.plan.get("plan")
    if plan:
        additions.append(f"# Plan (selected before you started)\n{plan['description']}"
                         + (f"\n{plan['prompt_modifier']}" if plan.get("prompt_modifier") else ""))
    system = Message.system("\n\n".join([base[0].content, *additions]))
    briefs = []  # what ran before the main pass: the swarm's aggregate, the parallel subtasks' answers
    if run.swarm.get("aggregate"):
        briefs.append(Message.user(f"[harness] the specialist swarm's analysis of the sources, merged:\n"
                                   f"{run.swarm['aggregate']}"))
    answers = subtasks.answers_message(run)
    if answers is not None:
        briefs.append(answers)
    attempt = current_attempt(run)
    if attempt.healing_prompt:  # a retry keeps the briefs, before the earlier attempts' turns
        return [system, *briefs, *earlier[1:], Message.user(attempt.healing_prompt)]
    return [system, *base[1:], *briefs]


def get_quality_preamble(fire: Fire, run: QualityRun) -> str:
    """The contract's requirements, as the model is told them before it answers."""
    contract = contract_for(fire, run)
    lines = ["# Quality requirements (your answer is checked against them before it reaches the user)"]
    if contract.min_output_chars:
        lines.append(f"- An answer of at least {contract.min_output_chars} characters.")
    for noun, minimum in (("insight", contract.min_insights), ("recommendation", contract.min_recommendations),
                          ("document", contract.min_documents)):
        if minimum:
            lines.append(f"- At least {minimum} {noun} card(s): respond(cards=[{{\"kind\": \"{noun}\", "
                         f"\"title\": ..., \"body\": ..., \"citations\": [{{\"id\": ..., \"quote\": ...}}]}}]).")
    if contract.require_citations:
        lines.append("- Cite your sources: each insight cites the ids it rests on, quoting them word for word; "
                     "cite only ids a tool returned to you in this fire.")
    if contract.require_artifacts and not (contract.min_insights or contract.min_recommendations
                                           or contract.min_documents):
        lines.append("- At least one card (an insight, a recommendation or a document).")
    return "\n".join(lines)


def attempt_split(run: QualityRun | None, turns: list) -> tuple[list, list]:
    """The journal's main-phase turns split into the earlier attempts' and the current attempt's."""
    if run is None:
        return [], turns
    first = current_attempt(run).first_turn
    return turns[:first], turns[first:]


def phase_after_respond(fire: Fire) -> str:
    return Fire.Phase.VERIFY if run_of(fire) is not None else Fire.Phase.WRITES


# --- post-flight ----------------------------------------------------------------------------------------------

def postflight(fire: Fire) -> None:
    """Judge the current attempt, once its verifier group has answered: move the fire on (phase main
    for a retry, writes for the answer), or raise Parked while it waits."""
    run = run_of(fire)
    attempt = current_attempt(run)
    if not attempt.contract:
        _attempt_judge_start(fire, run, attempt)
    if run.waiting_for or not attempt.verifier:
        if not run.waiting_for:  # the verdict is missing but nothing is awaited: ask again
            _verification_dispatch(fire, run, attempt)
        raise Parked(run.waiting_for)
    _decide(fire, run, attempt)


def _attempt_judge_start(fire: Fire, run: QualityRun, attempt: QualityAttempt) -> None:
    """Record the attempt's answer and its contract verdict (deterministic, no model call), and send
    the verifier group to the quality worker, in one transaction (the chord goes after commit)."""
    response = fire.response
    result, check = contract_evaluate(fire, run, response)
    # The stream checks ran as the answer was written (.streaming); when nothing streamed through them
    # in this process, they read the final answer now (but the checkpoints that alerted already).
    alerts = [] if monitored(run) else [alert.as_event() for alert in attempt_monitor(run).feed(response.get("body", ""))]
    with transaction.atomic():
        attempt.response, attempt.stream_alerts = response, [*attempt.stream_alerts, *alerts]
        attempt.contract = {**result.as_event(), "contract": result.contract.as_dict(), "checks": result.checks,
                            "citations": check.as_dict()}
        attempt.save(update_fields=["response", "contract", "stream_alerts"])
        with emitting(fire, run):
            for alert in alerts:
                emit(fire, run, "harness_stream_alert", {**alert, "attempt": attempt.number})
            emit(fire, run, "harness_contract", {**result.as_event(), "attempt": attempt.number})
        _verification_dispatch(fire, run, attempt)


def contract_evaluate(fire: Fire, run: QualityRun, response: dict) -> tuple[ContractResult, CitationCheck]:
    """The answer against its contract, its citations checked against the lake: cited ids must exist
    and have been returned to this fire by a tool (or the pre-flight's retrieval), quotes must be in
    the cited delta. The source count is the distinct existing deltas returned to the fire."""
    citations = citations_of(response)
    # the tool results are read when something needs them: citations to check, or a contract whose
    # minimum grows with the sources (synthesis, full pipeline)
    wanted = citations or str(workflow_type_of(run.complexity.get("workflow_type", ""))) in SOURCE_COUNTED_WORKFLOWS
    returned = (returned_ids(fire) if wanted else set()) | set(run.sources) | subtasks.cited_ids(run)
    counts = ArtifactCounts.from_kinds(card.get("kind", "") for card in response.get("cards") or [])
    check = citations_check(workspace=fire.workspace, citations=citations, returned_ids=returned)
    result = ContractEvaluator.evaluate(contract=contract_for(fire, run, source_count=len(_existing(fire, returned))),
                                        output_text=response.get("body", ""), artifacts=counts, citations=check)
    return result, check


def _verification_dispatch(fire: Fire, run: QualityRun, attempt: QualityAttempt) -> None:
    token = uuid.uuid4().hex
    run.state, run.waiting_for, run.waiting_token, run.waiting_since = (
        QualityRun.State.VERIFYING, "verifier", token, timezone.now())
    run.save(update_fields=["state", "waiting_for", "waiting_token", "waiting_since"])
    verification_send(run_id=run.pk, attempt=attempt.number, token=token, perspectives=perspectives_for(run))


def verification_send(*, run_id, attempt: int, token: str, perspectives) -> None:
    """The verifier group as a chord on the quality queue, after commit: one task per perspective, and
    the join as its callback."""
    header = group(signature("quality.verify_perspective", args=[run_id, attempt, p, token]) for p in perspectives)
    callback = signature("quality.verification_join", args=[run_id, attempt, token])
    transaction.on_commit(lambda: chord(header)(callback))


def perspectives_for(run: QualityRun) -> tuple[str, ...]:
    contrastive = (run.complexity.get("level") == "COMPLEX"
                   and run.complexity.get("workflow_type") in CONTRASTIVE_WORKFLOWS)
    return agents.PERSPECTIVES if contrastive else ("standard",)


def _decide(fire: Fire, run: QualityRun, attempt: QualityAttempt) -> None:
    workflow = run.complexity.get("workflow_type", "chat")
    policy = retry_policy_get(workspace_id=fire.workspace_id)
    limits = policy.for_workflow(workflow)
    contract, verifier = attempt.contract, attempt.verifier
    decision = policy.should_retry(workflow_type=workflow, attempt=attempt.number,
                                   contract_passed=contract["passed"], verifier_score=verifier["score"])
    if run.iterations > 1:  # deep-synthesis iteration: every pass is made, the best one wins
        more = attempt.number < run.iterations
        decision = type(decision)(more, f"Iteration {attempt.number} of {run.iterations}")
    with transaction.atomic(), emitting(fire, run):
        attempt.combined = combined_score(contract_passed=contract["passed"], verifier_score=verifier["score"])
        attempt.decision = {"retry": decision.retry, "reason": decision.reason}
        attempt.save(update_fields=["combined", "decision"])
        emit(fire, run, "harness_verifier", {
            "passed": verifier["passed"], "score": verifier["score"], "issues": verifier["issues"],
            "feedback": verifier["feedback"], "reasoning": decision.reason, "attempt": attempt.number,
            "contrastive": verifier.get("contrastive"), "is_fallback": verifier.get("is_fallback", False)})
        if decision.retry:
            _retry(fire, run, attempt, limits, decision.reason)
        else:
            _accept(fire, run, attempt, limits, workflow, decision.reason)


def _retry(fire: Fire, run: QualityRun, attempt: QualityAttempt, limits: RetrySettings, reason: str) -> None:
    """A new attempt of the same fire: its prompt is the healing prompt, its turns follow the journal's."""
    number = attempt.number + 1
    healing = FailureAnalyzer.build_healing_prompt(
        original_query=fire.question, attempt=number,
        max_attempts=run.iterations if run.iterations > 1 else limits.max_attempts,
        contract_issues=attempt.contract["issues"], verifier_issues=attempt.verifier["issues"],
        verifier_feedback=attempt.verifier["feedback"])
    run._current_attempt = QualityAttempt.objects.create(
        workspace_id=fire.workspace_id, run=run, number=number, healing_prompt=healing,
        first_turn=FireTurn.objects.filter(fire=fire, phase=Fire.Phase.MAIN).count())
    run.attempt, run.state = number, QualityRun.State.RUNNING
    run.save(update_fields=["attempt", "state"])
    emit(fire, run, "harness_retry", {"attempt": number, "reason": reason, "previous_score": attempt.combined})
    fire.phase, fire.response, fire.stop_reason = Fire.Phase.MAIN, {}, ""
    fire.save(update_fields=["phase", "response", "stop_reason"])


def _accept(fire: Fire, run: QualityRun, attempt: QualityAttempt, limits: RetrySettings, workflow: str,
            reason: str) -> None:
    """The best attempt becomes the answer (the latest among equals); degraded when the attempts ran
    out, or the gap persisted, without reaching good enough."""
    attempts = [attempt] if attempt.number == 1 else list(run.attempts.order_by("number"))
    best = max(attempts, key=lambda a: (a.combined if a.combined is not None else -1, a.number))
    if run.iterations > 1:
        fire.refresh_from_db(fields=["cost"])
        emit(fire, run, "harness_iteration_complete", {
            "iterations": len(attempts), "best_score": best.combined, "best_iteration": best.number,
            "accepted_count": sum(1 for a in attempts if (a.combined or 0) >= limits.good_enough_score),
            "total_duration_ms": round((timezone.now() - run.created_at).total_seconds() * 1000, 1),
            "estimated_cost_usd": float(fire.cost)})
    elif best.combined < limits.good_enough_score and (attempt.number >= limits.max_attempts or "Severe" in reason):
        run.degraded = {"attempts_made": attempt.number, "best_score": best.combined, "workflow_type": workflow,
                        "issues": sorted({i for a in attempts for i in a.contract["issues"] + a.verifier["issues"]})}
        emit(fire, run, "harness_degraded", run.degraded)
    run.scores = {}
    if EVENTS_BY_WORKFLOW.get(workflow):  # chat has no score: its contract is not evaluated again
        result, check = contract_evaluate(fire, run, best.response)
        scores = quality_scores(workflow, contract=result, verifier_score=best.verifier["score"], citations=check)
        run.scores = {name: score.as_event() for name, score in scores.items()}
    for name, score in run.scores.items():
        emit(fire, run, name, score)
    run.final_attempt, run.verifier_score = best.number, best.verifier["score"]
    run.state, run.finished_at = QualityRun.State.DONE, timezone.now()
    run.context_metrics = context_metrics(
        (name, chars) for name, chars in fire_tool_result_sizes(fire_id=fire.pk) if name != "respond").as_event()
    _profile_after_run(fire, run, best)
    run.save(update_fields=["degraded", "scores", "final_attempt", "verifier_score", "state", "finished_at",
                            "context_metrics", "profile"])
    emit(fire, run, "context_metrics", run.context_metrics)
    fire.response = best.response
    if best.verifier.get("is_fallback"):
        fire.response = {**best.response, "is_fallback": True}
    fire.phase = Fire.Phase.WRITES
    fire.save(update_fields=["phase", "response"])


# --- the verifier group's tasks ------------------------------------------------------------------------------

def verification_run(*, run_id, attempt: int, perspective: str) -> dict:
    """One verifier of an attempt (a task of the group): its verdict, recorded once (a redelivered task
    finds it and makes no second call)."""
    row = QualityAttempt.objects.select_related("run__fire__workspace").get(run_id=run_id, number=attempt)
    if perspective in row.perspectives:
        return row.perspectives[perspective]
    fire, response = row.run.fire, row.response
    counts = ArtifactCounts.from_kinds(card.get("kind", "") for card in response.get("cards") or [])
    calibration = quality_settings_get(workspace_id=fire.workspace_id).calibration if perspective == "standard" else ""
    verdict = agents.verify(workspace=fire.workspace, perspective=perspective, query=fire.question,
                            output=response.get("body", ""), artifact_summary=counts.summary(), calibration=calibration)
    with connection.cursor() as cursor:  # one statement: the group's tasks write the same row at once
        cursor.execute("UPDATE harness_qualityattempt SET perspectives = perspectives || %s::jsonb WHERE id = %s",
                       [_json({perspective: verdict}), row.pk])
    return verdict


def verification_join(*, run_id, attempt: int, token: str) -> bool:
    """The chord's callback: combine the verdicts into the attempt's and tick the fire's session again.
    False (nothing done) when the run no longer waits for this chord or a verdict is missing."""
    with transaction.atomic():
        # the attempt read with its run, whose row is locked (the group's joins, a resent chord's)
        row = QualityAttempt.objects.select_for_update(of=("run",)).select_related("run__fire").get(
            run_id=run_id, number=attempt)
        run = row.run
        if run.waiting_for != "verifier" or run.waiting_token != token:
            return False
        wanted = perspectives_for(run)
        if any(p not in row.perspectives for p in wanted):
            return False
        row.verifier = row.perspectives["standard"] if wanted == ("standard",) else agents.contrastive_combine(
            row.perspectives)
        row.save(update_fields=["verifier"])
        run.waiting_for, run.waiting_token, run.waiting_since = "", "", None
        run.save(update_fields=["waiting_for", "waiting_token", "waiting_since"])
        fire_resume(run.fire)
    return True


def runs_waiting_resend(*, older_than_seconds: float) -> list:
    """Send again the chord of every run waiting longer than this (a worker died under it, the broker
    lost it): its tasks that already answered return what they recorded. Run by the sweep."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    resent = []
    for run in QualityRun.objects.filter(waiting_for__in=["verifier", "swarm", "subtasks"], waiting_since__lt=cutoff):
        with transaction.atomic():
            QualityRun.objects.filter(pk=run.pk, waiting_token=run.waiting_token).update(waiting_since=timezone.now())
            if run.waiting_for == "swarm":
                swarm.send(run_id=run.pk, specialists=run.swarm.get("specialists", []), token=run.waiting_token)
            elif run.waiting_for == "subtasks":
                subtasks.send(run_id=run.pk, steps=subtasks.next_layer(run), token=run.waiting_token)
            else:
                verification_send(run_id=run.pk, attempt=run.attempt, token=run.waiting_token,
                                  perspectives=perspectives_for(run))
        resent.append(run.pk)
    return resent


# --- the workspace profile -------------------------------------------------------------------------------------

def workspace_profile(*, workspace_id):
    """The workspace's profile (seed 001's WorkspaceProfile) from its finished quality runs and their
    feedback, cached 10 minutes."""
    return profile_cached(workspace_id=workspace_id, build=lambda: _profile_build(workspace_id))


def _profile_build(workspace_id, finishing: tuple[QualityRun, QualityAttempt] | None = None):
    """The profile; `finishing`: a run being accepted (its final attempt), counted as the newest done run
    before its row says so."""
    runs = QualityRun.objects.filter(workspace_id=workspace_id, state=QualityRun.State.DONE)
    if finishing is not None:
        runs = runs.exclude(pk=finishing[0].pk)
    feedback = RawSQL(f"SELECT count(DISTINCT fire_id) FROM {Feedback._meta.db_table} WHERE workspace_id = %s",
                      [workspace_id])
    rows = list(QualityAttempt.objects.filter(run__in=runs, number=F("run__final_attempt")).annotate(feedback=feedback)
                .order_by("-created_at").values_list("combined", "contract", "verifier", "feedback")[:PROFILE_WINDOW])
    finals = [row[:3] for row in rows]
    # the workspace's feedback is counted beside its runs (when it has none, on its own)
    feedback_count = rows[0][3] if rows else Feedback.objects.filter(workspace_id=workspace_id).values(
        "fire").distinct().count()
    total = len(finals) if len(finals) < PROFILE_WINDOW else runs.count()  # one final attempt per done run
    if finishing is not None:
        final = finishing[1]
        finals, total = [(final.combined, final.contract, final.verifier), *finals][:PROFILE_WINDOW], total + 1
    issues = [issue for _, contract, verifier in finals for issue in contract.get("issues", []) + verifier.get(
        "issues", [])]
    scores = [verifier.get("score", 0.0) for _, _, verifier in finals]
    combined = [value for value, _, _ in finals if value is not None]
    return profile_build(workspace_id=workspace_id, total_runs=total,
                         avg_quality=sum(combined) / len(combined) if combined else None,
                         avg_verifier_score=sum(scores) / len(scores) if scores else None,
                         feedback_count=feedback_count or 0, issues=issues)


def _profile_after_run(fire: Fire, run: QualityRun, final: QualityAttempt) -> None:
    """harness_workspace_profile after each run (counted in, as its final attempt says), and
    milestone_unlocked when this run crossed 9 -> 10 or 49 -> 50 runs."""
    profile_invalidate(workspace_id=fire.workspace_id)
    profile = profile_cached(workspace_id=fire.workspace_id, build=lambda: _profile_build(
        fire.workspace_id, finishing=(run, final)))
    run.profile = profile.as_event()
    emit(fire, run, "harness_workspace_profile", run.profile)
    milestone = milestone_crossed(profile.total_runs - 1, profile.total_runs)
    if milestone is not None:
        emit(fire, run, "milestone_unlocked", milestone.as_event(profile))


# --- events and reads -----------------------------------------------------------------------------------------

def attempt_monitor(run: QualityRun) -> StreamMonitor:
    """The current attempt's stream monitor, made once per attempt (and process): the checkpoints that
    alerted already in this attempt are not checked again."""
    attempt = current_attempt(run)
    held = getattr(run, "_stream_monitor", None)
    if held is None or held[0] != attempt.number:
        monitor = StreamMonitor(run.complexity.get("workflow_type", "chat"))
        monitor.checked.update(alert["checkpoint"] for alert in attempt.stream_alerts)
        held = run._stream_monitor = (attempt.number, monitor)
    return held[1]


def monitored(run: QualityRun) -> bool:
    """Whether the current attempt's text went through its stream monitor in this process."""
    held = getattr(run, "_stream_monitor", None)
    return held is not None and held[0] == run.attempt and bool(held[1].text)


def current_attempt(run: QualityRun) -> QualityAttempt:
    attempt = getattr(run, "_current_attempt", None)  # read once per loaded run and attempt number
    if attempt is None or attempt.number != run.attempt:
        attempt = run._current_attempt = QualityAttempt.objects.get(run=run, number=run.attempt)
    return attempt


def contract_for(fire: Fire, run: QualityRun, *, source_count: int | None = None) -> WorkflowContract:
    if source_count is None:
        source_count = len(run.sources)
    return WorkflowContract.for_workflow(run.complexity.get("workflow_type", "chat"), source_count=source_count,
                                         expected=ExpectedOutput.from_dict(run.complexity.get("expected")),
                                         quality_multiplier=run.profile.get("quality_multiplier", 1.0)
                                         if run.profile else 1.0)


def citations_of(response: dict) -> list[Citation]:
    """The answer's citations: each card's {id, quote} and cited_ids, and the response's cited_ids."""
    cited = []
    for card in response.get("cards") or []:
        for item in card.get("citations") or []:
            if isinstance(item, dict) and item.get("id"):
                cited.append(Citation(str(item["id"]), str(item.get("quote") or "")))
        cited += [Citation(str(i)) for i in card.get("cited_ids") or []]
    cited += [Citation(str(i)) for i in response.get("cited_ids") or []]
    seen, unique = set(), []
    for citation in cited:
        if (citation.delta_id, citation.quote) not in seen:
            seen.add((citation.delta_id, citation.quote))
            unique.append(citation)
    return unique


def returned_ids(fire: Fire) -> set[str]:
    """Every delta id that appears in a tool result of the fire (candidates: the lake says which exist)."""
    found = set()
    for result in FireToolCall.objects.filter(fire=fire, ok=True).exclude(name="respond").values_list("result",
                                                                                                       flat=True):
        found.update(DELTA_ID.findall(result))
    return found


def _existing(fire: Fire, ids: set[str]) -> set[str]:
    if not ids:
        return set()
    return set(Delta.objects.filter(workspace_id=fire.workspace_id, pk__in=ids).values_list("pk", flat=True))


def _json(value) -> str:
    return json.dumps(value, default=str)


def is_parked(fire: Fire) -> bool:
    """Whether the fire's last run parked it (waits for the quality worker)."""
    run = run_of(fire)
    return run is not None and bool(run.waiting_for)


_UNREAD = object()


def run_of(fire: Fire) -> QualityRun | None:
    """The fire's QualityRun (None when the harness does not wrap it), read once per loaded fire: while
    a run holds the fire's claim, only that run changes its QualityRun (the quality worker writes it
    only while the fire is parked, after the run has ended)."""
    run = fire.__dict__.get("_quality_run", _UNREAD)
    if run is _UNREAD:  # the run with its current attempt (the latest: attempts are made one after the other)
        attempt = QualityAttempt.objects.select_related("run").filter(run__fire=fire).order_by("-number").first()
        run = attempt.run if attempt is not None else None
        if run is not None:
            run._current_attempt = attempt
        fire._quality_run = run
    return run
