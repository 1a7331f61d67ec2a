"""The quality harness around a fire (seed 001), as the hooks harness.fires.loop calls:

    preflight            before the main loop: classify (and, for COMPLEX, plan) once per fire,
                         recorded as its QualityRun; the plan's subtasks become the plan board;
                         a synthesis over many sources may first park for its swarm (.swarm),
                         a plan with a layer of parallel subtasks for its child fires (.subtasks)
    preamble             what the main loop adds to its prompt: the contract's requirements
                         (get_quality_preamble), the plan's modifier, the swarm's brief, and for a
                         retry the earlier attempts' turns and the healing prompt
    phase_after_respond  an answer goes to post-flight (phase verify) instead of the writes
    postflight_start     the answer saved with its contract (here, deterministic) and the verifier
                         group sent to the quality worker (a Celery chord; a lone standard verifier is
                         one task, which joins itself), in one statement that gives the fire's claims
                         back: the fire records what it waits for and parks, ending its task
    postflight_wait      Parked while the verdict is awaited; the verifiers' callback ticks the fire
                         back (fires.fire_parked_resume: one read of the fire with its run)
    postflight           resumed, it decides: accept (the best attempt becomes the answer, phase
                         writes, committed with the per-fire writes) or retry (a new attempt of the
                         same fire, phase main; every attempt when the message asked for
                         deep-synthesis iterations)

A step's rows and events are written together, in one statement (.events.emitting).

It wraps the top-level fires of sessions (reactive, Sit rounds) of workspaces whose QualitySettings
are enabled; introspective fires (Fathom calling itself) and child fires run without it.

Model calls per fire: classifier 1; planner 1 (COMPLEX only); verifier 1 per attempt, or 3 with
contrastive verification (COMPLEX synthesis, full_pipeline, recommendation); specialists N and the
aggregator 1 when the swarm runs; a layer of parallel subtasks runs as child fires (.subtasks), each
making its own fire's calls (main and review pass, no harness)."""

import functools
import json
import logging
import re
import uuid
from dataclasses import dataclass
from datetime import timedelta

from celery import chord, group, signature
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from fathom.celery import send_task_on_commit
from fathom.llm import Message
from fathom.models import Workspace
from fathom.sql import ids_next_sql, loaded, prepared_sql, select_list
from fathom.tracing.services import run_spans_of, run_spans_sql
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
from harness.quality.events import changed, created, emit, emitting, fire_resume
from harness.quality.metrics import context_metrics
from harness.quality.models import QualityAttempt, QualityRetryPolicy, QualityRun, QualitySettings
from harness.quality.plans import PlanSelector
from harness.quality.profile import milestone_crossed, profile_build, profile_cached
from harness.quality.prompts import prompt_or_default, prompt_override_sql
from harness.quality.retry import (
    DEFAULT_RETRY_SETTINGS,
    FailureAnalyzer,
    RetryPolicy,
    RetrySettings,
    combined_score,
)
from harness.quality.scores import EVENTS_BY_WORKFLOW, quality_scores
from harness.quality.selectors import (
    fire_tool_result_sizes,
    runs_stats,
    runs_stats_of,
    runs_stats_sql,
    workspace_stats,
)
from harness.quality.stream import StreamMonitor
from harness.runtime import claims
from harness.runtime.models import Session, Turn
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

def quality_settings_get(*, workspace_id, prompt: str = "", ids_for=()) -> QualitySettings:
    """The workspace's quality settings (a row is created on first use, enabled as
    FATHOM_QUALITY_DEFAULT_ENABLED says). `prompt`: the id of a prompt read along with them, given as
    their `.prompt` (what prompt_get would give). `ids_for`: models whose next primary keys are taken
    along with them when the harness is enabled, given as their `.new_ids` (one each; None when it is
    not): the keys of the rows a wrapped fire inserts with its events."""
    columns, params = ["*"], []
    if prompt:
        columns.append(f"{prompt_override_sql()} AS prompt_override")
        params.append(prompt)
    if ids_for:
        sql, ids_params = ids_next_sql(*ids_for)
        columns.append(f"CASE WHEN enabled THEN {sql} END AS new_ids")
        params += ids_params
    # read raw: the ORM's building of the query cost more than the query (on every wrapped fire's way in)
    sql = f"SELECT {', '.join(columns)} FROM {QualitySettings._meta.db_table} WHERE workspace_id = %s"
    found = next(iter(QualitySettings.objects.raw(sql, [*params, workspace_id])), None)
    if found is None:
        QualitySettings.objects.get_or_create(workspace_id=workspace_id,
                                              defaults={"enabled": settings.FATHOM_QUALITY_DEFAULT_ENABLED})
        found = next(iter(QualitySettings.objects.raw(sql, [*params, workspace_id])))
    if prompt:
        found.prompt = prompt_or_default(prompt, found.prompt_override)
    return found


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
        quality = quality_settings_get(workspace_id=fire.workspace_id, prompt="classifier_system",
                                       ids_for=(QualityRun, QualityAttempt))
        start = fire.__dict__.pop("_start_unsaved", ())
        if not applies(fire, quality):
            if start:
                fire.save(update_fields=start)
            return None
        complexity = agents.classify(workspace=fire.workspace, question=fire.question, system=quality.prompt)
        workflow = complexity["workflow_type"]
        selection = None
        if complexity["level"] == "COMPLEX":
            candidates = agents.plans_generate(workspace=fire.workspace, question=fire.question, complexity=complexity)
            selection = PlanSelector.select(candidates, query=fire.question, workflow_type=workflow,
                                            workspace_stats=workspace_stats(workspace=fire.workspace))
        sources = swarm.sources_find(fire, quality) if swarm.may_activate(workflow, quality) else []
        multiplier = workspace_profile(workspace_id=fire.workspace_id).quality_multiplier
        run = QualityRun(workspace_id=fire.workspace_id, fire=fire, complexity=complexity,
                         sources=[s["id"] for s in sources], iterations=iterations_asked(fire),
                         plan=selection.as_event() if selection else {}, profile={"quality_multiplier": multiplier})
        run.pk, attempt_pk = quality.new_ids
        run._current_attempt = QualityAttempt(pk=attempt_pk, workspace_id=fire.workspace_id, run=run, number=1,
                                              first_turn=0)
        with emitting(fire, run):  # the run, its first attempt, its events (and the fire's start): one statement
            changed(fire, *start)
            created(run)
            created(run._current_attempt)
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
        changed(fire, "plan")


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

def postflight_start(fire: Fire, *, answer: tuple[str, ...]) -> None:
    """Record the current attempt's answer (the fire's response) and its contract verdict (deterministic,
    no model call), and send its verifier group to the quality worker. The fire's fields `answer` (its
    response, its phase...) are saved with them: one statement (in the caller's transaction, if any; the
    group goes after commit)."""
    run = run_of(fire)
    attempt = current_attempt(run)
    response = fire.response
    result, check = contract_evaluate(fire, run, response)
    # The stream checks ran as the answer was written (.streaming); when nothing streamed through them
    # in this process, they read the final answer now (but the checkpoints that alerted already).
    alerts = [] if monitored(run) else [alert.as_event() for alert in attempt_monitor(run).feed(response.get("body", ""))]
    with emitting(fire, run, parking=True):  # the fire parks next, waiting for its verifier
        changed(fire, *answer)
        attempt.response, attempt.stream_alerts = response, [*attempt.stream_alerts, *alerts]
        attempt.contract = {**result.as_event(), "contract": result.contract.as_dict(), "checks": result.checks,
                            "citations": check.as_dict()}
        changed(attempt, "response", "contract", "stream_alerts")
        for alert in alerts:
            emit(fire, run, "harness_stream_alert", {**alert, "attempt": attempt.number})
        emit(fire, run, "harness_contract", {**result.as_event(), "attempt": attempt.number})
        token = _verifier_awaited(run)
    verification_send(run_id=run.pk, attempt=attempt.number, token=token, perspectives=perspectives_for(run),
                      brief=verifier_brief(fire, response))


def postflight_wait(fire: Fire) -> None:
    """Raise Parked while the current attempt waits for its verdict; return once it has one."""
    run = run_of(fire)
    attempt = current_attempt(run)
    if not attempt.contract:  # resumed before its answer was judged
        postflight_start(fire, answer=())
    elif not run.waiting_for and not attempt.verifier:  # the verdict is missing but nothing is awaited: ask again
        token = _verifier_awaited(run)
        verification_send(run_id=run.pk, attempt=attempt.number, token=token, perspectives=perspectives_for(run),
                          brief=verifier_brief(fire, attempt.response))
    if run.waiting_for:
        raise Parked(run.waiting_for)


def postflight(fire: Fire) -> None:
    """Judge the current attempt by its verdict (postflight_wait returned): move the fire on, to phase
    main for a retry, to writes for the answer. Its writes join the caller's transaction, if any."""
    run = run_of(fire)
    _decide(fire, run, current_attempt(run))


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


def _verifier_awaited(run: QualityRun) -> str:
    """The run waits for its verifier group from now (saved with the step, or now): the group's token."""
    token = uuid.uuid4().hex
    run.state, run.waiting_for, run.waiting_token, run.waiting_since = (
        QualityRun.State.VERIFYING, "verifier", token, timezone.now())
    changed(run, "state", "waiting_for", "waiting_token", "waiting_since")
    return token


def verification_send(*, run_id, attempt: int, token: str, perspectives, brief: dict) -> None:
    """The verifier group on the quality queue, after commit: a chord of one task per perspective with
    the join as its callback; a lone standard verifier is one task, which joins itself. Each carries
    the verifiers' `brief` (verifier_brief)."""
    if tuple(perspectives) == ("standard",):
        send_task_on_commit("quality.verify", args=[run_id, attempt, token, brief])
        return
    header = group(signature("quality.verify_perspective", args=[run_id, attempt, p, token, brief])
                   for p in perspectives)
    callback = signature("quality.verification_join", args=[run_id, attempt, token])
    transaction.on_commit(lambda: chord(header)(callback))


def verifier_brief(fire: Fire, response: dict) -> dict:
    """What the verifiers read, sent with them: their fresh context (the query, the answer as far as
    they read them, a summary of its artifacts; nothing of the workspace's data), and where the fire is,
    to carry it on."""
    counts = ArtifactCounts.from_kinds(card.get("kind", "") for card in response.get("cards") or [])
    return {"workspace_id": fire.workspace_id, "session_id": str(fire.session_id), "fire_id": str(fire.pk),
            "query": fire.question[:agents.QUERY_CHARS], "output": response.get("body", "")[:agents.OUTPUT_CHARS],
            "artifacts": counts.summary()}


def perspectives_for(run: QualityRun) -> tuple[str, ...]:
    contrastive = (run.complexity.get("level") == "COMPLEX"
                   and run.complexity.get("workflow_type") in CONTRASTIVE_WORKFLOWS)
    return agents.PERSPECTIVES if contrastive else ("standard",)


def _decide(fire: Fire, run: QualityRun, attempt: QualityAttempt) -> None:
    workflow = run.complexity.get("workflow_type", "chat")
    policy = getattr(run, "_retry_policy", None) or retry_policy_get(workspace_id=fire.workspace_id)
    limits = policy.for_workflow(workflow)
    contract, verifier = attempt.contract, attempt.verifier
    decision = policy.should_retry(workflow_type=workflow, attempt=attempt.number,
                                   contract_passed=contract["passed"], verifier_score=verifier["score"])
    if run.iterations > 1:  # deep-synthesis iteration: every pass is made, the best one wins
        more = attempt.number < run.iterations
        decision = type(decision)(more, f"Iteration {attempt.number} of {run.iterations}")
    with transaction.atomic(savepoint=False), emitting(fire, run):
        attempt.combined = combined_score(contract_passed=contract["passed"], verifier_score=verifier["score"])
        attempt.decision = {"retry": decision.retry, "reason": decision.reason}
        changed(attempt, "combined", "decision")
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
    run.__dict__.pop("_tool_result_sizes", None)  # the new attempt calls tools of its own
    changed(run, "attempt", "state")
    emit(fire, run, "harness_retry", {"attempt": number, "reason": reason, "previous_score": attempt.combined})
    fire.phase, fire.response, fire.stop_reason = Fire.Phase.MAIN, {}, ""
    changed(fire, "phase", "response", "stop_reason")


def _accept(fire: Fire, run: QualityRun, attempt: QualityAttempt, limits: RetrySettings, workflow: str,
            reason: str) -> None:
    """The best attempt becomes the answer (the latest among equals); degraded when the attempts ran
    out, or the gap persisted, without reaching good enough."""
    attempts = [attempt] if attempt.number == 1 else [  # the current one as decided (saved with the step)
        attempt if earlier.number == attempt.number else earlier for earlier in run.attempts.order_by("number")]
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
    sizes = run.__dict__.pop("_tool_result_sizes", None)  # read with the fire on its way back
    if sizes is None:
        sizes = fire_tool_result_sizes(fire_id=fire.pk)
    run.context_metrics = context_metrics((name, chars) for name, chars in sizes if name != "respond").as_event()
    _profile_after_run(fire, run, best)
    changed(run, "degraded", "scores", "final_attempt", "verifier_score", "state", "finished_at",
            "context_metrics", "profile")
    emit(fire, run, "context_metrics", run.context_metrics)
    fire.response = best.response
    if best.verifier.get("is_fallback"):
        fire.response = {**best.response, "is_fallback": True}
    fire.phase = Fire.Phase.WRITES
    changed(fire, "phase", "response")


# --- the verifier group's tasks ------------------------------------------------------------------------------

def verification_run(*, run_id, attempt: int, perspective: str, brief: dict) -> dict:
    """One verifier of an attempt (a task of the group): its verdict, recorded once (a redelivered task
    finds it and makes no second call)."""
    context = _verifier_context(run_id=run_id, attempt=attempt, perspective=perspective, brief=brief)
    if context.recorded is not None:
        return context.recorded
    verdict = _verdict(perspective, brief, context)
    with connection.cursor() as cursor:  # one statement: the group's tasks write the same row at once
        cursor.execute("UPDATE harness_qualityattempt SET perspectives = perspectives || %s::jsonb "
                       "WHERE run_id = %s AND number = %s", [_json({perspective: verdict}), run_id, attempt])
    return verdict


def verification_join(*, run_id, attempt: int, token: str) -> bool:
    """The chord's callback: combine the verdicts into the attempt's and tick the fire's session again.
    False (nothing done) when the run no longer waits for this chord or a verdict is missing."""
    row = QualityAttempt.objects.select_related("run__fire").get(run_id=run_id, number=attempt)
    wanted = perspectives_for(row.run)
    if any(p not in row.perspectives for p in wanted):
        return False
    verdict = row.perspectives["standard"] if wanted == ("standard",) else agents.contrastive_combine(row.perspectives)
    fire = row.run.fire
    return _verdict_record(run_id=run_id, attempt=attempt, token=token, verdict=verdict, session_id=fire.session_id,
                           workspace_id=fire.workspace_id, fire_id=fire.pk)


def verification_alone(*, run_id, attempt: int, token: str, brief: dict) -> bool:
    """The lone standard verifier of an attempt (no contrastive group): its verdict, recorded as the
    attempt's, and the fire's session ticked again. False (nothing done, no call made) when the run no
    longer waits for this task."""
    context = _verifier_context(run_id=run_id, attempt=attempt, perspective="standard", brief=brief, token=token)
    if not context.waiting:
        return False
    verdict = _verdict("standard", brief, context)
    return _verdict_record(run_id=run_id, attempt=attempt, token=token, verdict=verdict, perspective="standard",
                           session_id=brief["session_id"], workspace_id=brief["workspace_id"], fire_id=brief["fire_id"])


@dataclass
class _VerifierContext:
    calibration: str
    prompt: str
    waiting: bool  # the run waits for the verifiers sent with the token
    recorded: dict | None  # the perspective's verdict, when recorded already


def _verifier_context(*, run_id, attempt: int, perspective: str, brief: dict, token: str = "") -> _VerifierContext:
    """What a verifier task reads besides its brief, in one query: the workspace's calibration, the
    perspective's prompt (the admin's override or the default), whether the run still waits for it,
    and its verdict if recorded already."""
    prompt_id = agents.verifier_prompt_id(perspective)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.calibration, {prompt_override_sql()}, "
            "EXISTS (SELECT 1 FROM harness_qualityrun WHERE id = %s AND waiting_for = 'verifier' AND waiting_token = %s), "
            "(SELECT perspectives -> %s FROM harness_qualityattempt WHERE run_id = %s AND number = %s) "
            "FROM (SELECT 1) AS one LEFT JOIN harness_qualitysettings s ON s.workspace_id = %s",
            [prompt_id, run_id, token, perspective, run_id, attempt, brief["workspace_id"]])
        calibration, override, waiting, recorded = cursor.fetchone()
    return _VerifierContext(calibration=calibration or "", prompt=prompt_or_default(prompt_id, override),
                            waiting=waiting, recorded=_json_of(recorded))


def _verdict(perspective: str, brief: dict, context: _VerifierContext) -> dict:
    """The verifier `perspective`'s verdict of the answer in `brief`: one model call, fresh context."""
    return agents.verify(workspace=brief["workspace_id"], perspective=perspective, query=brief["query"],
                         output=brief["output"], artifact_summary=brief["artifacts"], system=context.prompt,
                         calibration=context.calibration if perspective == "standard" else "")


def _verdict_record(*, run_id, attempt: int, token: str, verdict: dict, perspective: str = "", session_id,
                    workspace_id, fire_id) -> bool:
    """The attempt's verdict (and the lone verifier's perspective), recorded if its run still waits for
    the verifiers sent with `token`, in one statement (its conditional UPDATE takes the run's row: of two
    joins at once, a resent chord's, one records it); the fire's session ticked again after commit.

    Outside a transaction its commit does not wait for the WAL flush (as a trace's or a claim's): the
    verdict is the answer of a call that can be made again, and the resumed fire's next commit flushes
    it. A crash of the database before that leaves the run waiting, and the sweep sends its verifier
    again (runs_waiting_resend): one more call, never a wrong or a lost answer."""
    alone = not connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute(
            ("SET LOCAL synchronous_commit TO OFF; " if alone else "")
            + "WITH waited AS (UPDATE harness_qualityrun SET waiting_for = '', waiting_token = '', "
            "waiting_since = NULL WHERE id = %s AND waiting_for = 'verifier' AND waiting_token = %s RETURNING id) "
            "UPDATE harness_qualityattempt SET verifier = %s::jsonb, perspectives = perspectives || %s::jsonb "
            "WHERE run_id = %s AND number = %s AND EXISTS (SELECT 1 FROM waited) RETURNING id",
            [run_id, token, _json(verdict), _json({perspective: verdict} if perspective else {}), run_id, attempt])
        if alone:
            cursor.nextset()
        if cursor.fetchone() is None:
            return False
    fire_resume(session_id=session_id, workspace_id=workspace_id, fire_id=fire_id)
    return True


def runs_waiting_resend(*, older_than_seconds: float) -> list:
    """Send again the chord of every run waiting longer than this (a worker died under it, the broker
    lost it): its tasks that already answered return what they recorded. Run by the sweep."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    resent = []
    for run in QualityRun.objects.filter(waiting_for__in=["verifier", "swarm", "subtasks"],
                                         waiting_since__lt=cutoff).select_related("fire"):
        with transaction.atomic():
            QualityRun.objects.filter(pk=run.pk, waiting_token=run.waiting_token).update(waiting_since=timezone.now())
            if run.waiting_for == "swarm":
                swarm.send(run_id=run.pk, specialists=run.swarm.get("specialists", []), token=run.waiting_token)
            elif run.waiting_for == "subtasks":
                subtasks.send(run_id=run.pk, steps=subtasks.next_layer(run), token=run.waiting_token)
            else:
                verification_send(run_id=run.pk, attempt=run.attempt, token=run.waiting_token,
                                  perspectives=perspectives_for(run),
                                  brief=verifier_brief(run.fire, current_attempt(run).response))
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
    window = PROFILE_WINDOW - (finishing is not None)
    stats = finishing[0].__dict__.pop("_runs_stats", None) if finishing is not None else None  # fire_parked_get's
    if stats is None:
        stats = runs_stats(workspace_id=workspace_id, window=window,
                           excluding_run_id=finishing[0].pk if finishing is not None else None)
    total, counted, combined_sum, combined_count = stats.runs, stats.counted, stats.combined_sum, stats.combined_count
    score_sum, issues = stats.score_sum, stats.issues
    if finishing is not None:
        final = finishing[1]
        total, counted, score_sum = total + 1, counted + 1, score_sum + final.verifier.get("score", 0.0)
        if final.combined is not None:
            combined_sum, combined_count = combined_sum + final.combined, combined_count + 1
        issues = [*final.contract.get("issues", []), *final.verifier.get("issues", []), *issues]
    return profile_build(workspace_id=workspace_id, total_runs=total,
                         avg_quality=combined_sum / combined_count if combined_count else None,
                         avg_verifier_score=score_sum / counted if counted else None,
                         feedback_count=stats.feedback_fires, issues=issues)


def _profile_after_run(fire: Fire, run: QualityRun, final: QualityAttempt) -> None:
    """harness_workspace_profile after each run (counted in, as its final attempt says), and
    milestone_unlocked when this run crossed 9 -> 10 or 49 -> 50 runs."""
    profile = profile_cached(workspace_id=fire.workspace_id, fresh=True, build=lambda: _profile_build(
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


def _json_of(value):
    return json.loads(value) if isinstance(value, str) else value


def is_parked(fire: Fire) -> bool:
    """Whether the fire's last run parked it (waits for the quality worker)."""
    run = run_of(fire)
    return run is not None and bool(run.waiting_for)


_UNREAD = object()


def fire_started(fire: Fire, *, fields) -> None:
    """The fire starts its first run: it has no QualityRun yet (run_of need not read one). Its `fields`
    (status running, ...) are saved now, or, when the harness may wrap it, by its pre-flight: with the
    run it makes (one commit, once the classifier has answered), or as soon as it knows it does not."""
    fire._quality_run = None
    if fire.depth or not fire.session_id:
        fire.save(update_fields=fields)
    else:
        fire._start_unsaved = fields


def fire_parked_get(*, fire_id, stale_after: int) -> Fire | None:
    """A fire the harness wraps, with its session, workspace and turn, its QualityRun and current attempt
    (run_of then reads nothing) and the retry policy of its workflow, in one query (the way back into a
    parked fire, where the ORM's building of it cost more than the query); None when it has no run.

    The same statement claims the fire when it is the unfinished fire of a running turn (claims.claim's
    first try, with `stale_after`: `fire._claimed` tells fire_run), reads the start events of its earlier
    runs' trace (`fire._run_spans`, what fires.loop would read with tracing.services.run_spans), and the
    figures of the workspace profile when its current attempt has its verdict (`run._runs_stats`, for
    the decision)."""
    select, models, params = _fire_parked_sql()
    claim, claim_params = claims.claim_sql(Fire, fire_id, stale_after=stale_after, where=_RESUMABLE,
                                           params=[list(Fire.TERMINAL), Turn.Status.RUNNING])
    # prepared once per connection: planning it cost as much as running it
    sql = prepared_sql("fathom_fire_parked", f"WITH claimed AS ({claim}) {select}")
    alone = not connection.in_atomic_block
    with connection.cursor() as cursor:
        # its plan generic, its joins in the order written: planning the best of their orders cost several
        # times the query; the claim is a lease (harness.runtime.claims): its commit need not wait for the
        # WAL flush
        cursor.execute("SET LOCAL synchronous_commit TO OFF; SET LOCAL join_collapse_limit = 1; "
                       "SET LOCAL plan_cache_mode = force_generic_plan; " + sql
                       if alone else sql, [*claim_params, *params, fire_id])
        if alone:
            for _ in range(3):
                cursor.nextset()
        row = cursor.fetchone()
    if row is None:
        return None
    loaded_rows, at = [], 0
    for model, fields in models:
        loaded_rows.append(loaded(model, fields, row[at:at + len(fields)]) if row[at] is not None else None)
        at += len(fields)
    attempt, run, fire, session, workspace, turn = loaded_rows
    attempt.run, run.fire, fire.session, fire.workspace, fire.turn = run, fire, session, workspace, turn
    run._current_attempt, fire._quality_run = attempt, run
    policy, sizes, spans, stats = row[at:at + 3], row[at + 3], row[at + 4], row[at + 5:at + 11]
    fire._claimed = row[at + 11]
    fire._run_spans = run_spans_of(_json_of(spans))  # for the trace it continues (fires.loop._earlier_runs)
    if policy[0] is not None:  # the workflow's policy row (made on first use, by retry_policy_get)
        run._retry_policy = RetryPolicy(settings={run.complexity.get("workflow_type", "chat"): RetrySettings(*policy)})
    run._tool_result_sizes = [tuple(size) for size in _json_of(sizes)]  # as fire_tool_result_sizes reads them
    if stats[0] is not None:
        run._runs_stats = runs_stats_of(stats, workspace_id=run.workspace_id, window=PROFILE_WINDOW - 1,
                                        excluding_run_id=run.pk)
    return fire


# the fire a parked fire's way back may claim with its read (fire_parked_get): an unfinished fire of a
# running turn, with a QualityRun
_RESUMABLE = (f"NOT {Fire._meta.db_table}.status = ANY(%s) AND EXISTS (SELECT 1 FROM {Turn._meta.db_table} t "
              f"WHERE t.id = {Fire._meta.db_table}.turn_id AND t.status = %s) AND EXISTS (SELECT 1 FROM "
              f"{QualityRun._meta.db_table} q WHERE q.fire_id = {Fire._meta.db_table}.id)")


@functools.cache
def _fire_parked_sql() -> tuple[str, list, list]:
    parts = [(QualityAttempt, "a", ()), (QualityRun, "r", ("events",)), (Fire, "f", ()), (Session, "s", ()),
             (Workspace, "w", ()), (Turn, "t", ())]
    selects, models = [], []
    for model, alias, deferred in parts:
        columns, fields = select_list(model, alias, deferred=deferred)
        selects.append(columns)
        models.append((model, fields))
    table = {model: model._meta.db_table for model, _, _ in parts}
    sizes = (f"(SELECT coalesce(json_agg(json_build_array(c.name, length(c.result)) ORDER BY ct.number, c.position), "
             f"'[]') FROM {FireToolCall._meta.db_table} c JOIN {FireTurn._meta.db_table} ct ON ct.id = c.turn_id "
             f"WHERE c.fire_id = f.id)")
    # the profile's figures, as _profile_build reads them of a run being accepted (but this one)
    stats, stats_params = runs_stats_sql(window=PROFILE_WINDOW - 1)
    return (f"SELECT {', '.join(selects)}, p.max_attempts, p.good_enough_score, p.low_quality_threshold, {sizes}, "
            f"{run_spans_sql(workspace='f.workspace_id', trace='f.trace_id', run='f.id::text')}, "
            f"st.*, EXISTS (SELECT 1 FROM claimed) "
            f"FROM {table[QualityRun]} r JOIN {table[QualityAttempt]} a ON a.run_id = r.id "
            f"JOIN {table[Fire]} f ON f.id = r.fire_id JOIN {table[Workspace]} w ON w.id = f.workspace_id "
            f"LEFT JOIN {table[Session]} s ON s.id = f.session_id LEFT JOIN {table[Turn]} t ON t.id = f.turn_id "
            f"LEFT JOIN {QualityRetryPolicy._meta.db_table} p ON p.workspace_id = r.workspace_id "
            f"AND p.workflow_type = r.complexity ->> 'workflow_type' "
            f"LEFT JOIN LATERAL (SELECT * FROM ({stats}) AS figures WHERE f.phase = %s AND a.verifier <> '{{}}'::jsonb "
            f"OFFSET 0) AS st ON true "  # OFFSET 0: a subquery of its own, whose condition is checked before it runs
            f"WHERE r.fire_id = %s ORDER BY a.number DESC LIMIT 1", models, [*stats_params, Fire.Phase.VERIFY])


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
