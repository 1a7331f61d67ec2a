"""The quality harness's post-flight (seed 001): a wrapped fire's answer is checked before it counts.
Its contract is evaluated at once (.checks, deterministic); its verifier, when it is one call (the lone
standard verifier), is called next in the fire's own run, as the classifier is; a contrastive group is
sent to the quality worker (.verification) while the fire parks, and its callback ticks the fire back.
The verdict decides: retry (a new attempt of the same fire whose prompt is the healing prompt; every
attempt when the message asked for deep-synthesis iterations) or keep the best attempt's answer,
flagged degraded when none reached good enough.

Model calls per attempt: the verifier 1, or 3 with contrastive verification (COMPLEX synthesis,
full_pipeline, recommendation); none for the contract."""

import uuid

from django.db import transaction
from django.utils import timezone

from harness.fires.hooks import Park, Verdict
from harness.fires.models import Fire, FireTurn
from harness.quality.checks import contract_evaluate
from harness.quality.configuration import retry_policy_of
from harness.quality.events import Step, emitting
from harness.quality.metrics import context_metrics
from harness.quality.models import QualityAttempt, QualityRun
from harness.quality.profile import profile_after_run
from harness.quality.retry import FailureAnalyzer, RetrySettings, combined_score
from harness.quality.run_state import FireQuality
from harness.quality.scores import EVENTS_BY_WORKFLOW, quality_scores
from harness.quality.selectors import fire_tool_result_sizes
from harness.quality.verification import (
    perspectives_for,
    verification_alone,
    verification_send,
    verified_in_fire,
    verifier_brief,
)

CAPPED = "The fire reached its turn cap"


def answer_submitted(state: FireQuality) -> Park | None:
    """Record the current attempt's answer (the fire's response, being saved) and its contract verdict
    (deterministic, no model call), and make the run wait for its verifier: a contrastive group is sent
    to the quality worker and the fire parks for it; the lone verifier is the fire's next step
    (answer_check). One statement, in the caller's transaction, that also gives a parking fire's claims
    back (the group goes after commit)."""
    fire, run, attempt = state.fire, state.run, state.attempt
    response = fire.response
    result, check = contract_evaluate(fire, run, response)
    # The stream checks ran as the answer was written (.stream_alerts); when nothing streamed through them
    # in this process, they read the final answer now (but the checkpoints that alerted already).
    alerts = [] if state.monitored else [alert.as_event() for alert in state.stream_monitor().feed(response.get("body", ""))]
    in_fire = verified_in_fire(run)
    with emitting(fire, run, parking=not in_fire) as step:
        attempt.response, attempt.stream_alerts = response, [*attempt.stream_alerts, *alerts]
        attempt.contract = {**result.as_event(), "contract": result.contract.as_dict(), "checks": result.checks,
                            "citations": check.as_dict()}
        step.changed(attempt, "response", "contract", "stream_alerts")
        for alert in alerts:
            step.emit("harness_stream_alert", {**alert, "attempt": attempt.number})
        step.emit("harness_contract", {**result.as_event(), "attempt": attempt.number})
        token = _verifier_awaited(run, step)
    if in_fire:
        return None
    verification_send(run_id=run.pk, attempt=attempt.number, token=token, perspectives=perspectives_for(run),
                      brief=verifier_brief(fire, response))
    return Park(run.waiting_for)


def answer_check(state: FireQuality) -> None:
    """The lone verifier of the current attempt, called here, outside any transaction (one model call),
    its verdict recorded as the quality worker records it: no park, no task, no way back (a contrastive
    group waits on the quality worker: nothing to do here). An answer that reached here unjudged is
    judged first; a verdict missing while nothing is awaited is asked for again."""
    fire, run, attempt = state.fire, state.run, state.attempt
    if not attempt.contract:  # resumed before its answer was judged
        with transaction.atomic():
            answer_submitted(state)
    elif not run.waiting_for and not attempt.verifier:
        token = _verifier_awaited(run)
        if not verified_in_fire(run):
            verification_send(run_id=run.pk, attempt=attempt.number, token=token, perspectives=perspectives_for(run),
                              brief=verifier_brief(fire, attempt.response))
    if run.waiting_for != "verifier" or not verified_in_fire(run):
        return
    verdict = verification_alone(run_id=run.pk, attempt=attempt.number, token=run.waiting_token,
                                 brief=verifier_brief(fire, attempt.response), resume=False)
    if verdict is None:  # the resend sweep's verifier recorded it first
        run.refresh_from_db(fields=["waiting_for", "waiting_token", "waiting_since"])
        attempt.refresh_from_db(fields=["verifier", "perspectives"])
    else:
        attempt.verifier = verdict
        run.waiting_for, run.waiting_token, run.waiting_since = "", "", None


def answer_verdict(state: FireQuality) -> Park | Verdict:
    """Park while the current attempt waits for its verifier group; once it has the verdict, decide:
    retry (a new attempt of the same fire) or keep the best attempt's answer. Its writes join the
    caller's transaction."""
    if state.run.waiting_for:
        return Park(state.run.waiting_for)
    return _decide(state)


def _verifier_awaited(run: QualityRun, step: Step | None = None) -> str:
    """The run waits for its verifier group from now (saved with the step, or now): the group's token."""
    token = uuid.uuid4().hex
    run.state, run.waiting_for, run.waiting_token, run.waiting_since = (
        QualityRun.State.VERIFYING, "verifier", token, timezone.now())
    fields = ("state", "waiting_for", "waiting_token", "waiting_since")
    if step is None:
        run.save(update_fields=fields)
    else:
        step.changed(run, *fields)
    return token


def _decide(state: FireQuality) -> Verdict:
    fire, run, attempt = state.fire, state.run, state.attempt
    workflow = run.complexity.get("workflow_type", "chat")
    policy = retry_policy_of(run)
    limits = policy.for_workflow(workflow)
    contract, verifier = attempt.contract, attempt.verifier
    decision = policy.should_retry(workflow_type=workflow, attempt=attempt.number,
                                   contract_passed=contract["passed"], verifier_score=verifier["score"])
    if run.iterations > 1:  # deep-synthesis iteration: every pass is made, the best one wins
        more = attempt.number < run.iterations
        decision = type(decision)(more, f"Iteration {attempt.number} of {run.iterations}")
    if fire.stop_reason == Fire.StopReason.MAX_TURNS:  # a retry would run into the same cap
        decision = type(decision)(False, f"{CAPPED}: not retried")
    with transaction.atomic(savepoint=False), emitting(fire, run) as step:
        attempt.combined = combined_score(contract_passed=contract["passed"], verifier_score=verifier["score"])
        attempt.decision = {"retry": decision.retry, "reason": decision.reason}
        step.changed(attempt, "combined", "decision")
        step.emit("harness_verifier", {
            "passed": verifier["passed"], "score": verifier["score"], "issues": verifier["issues"],
            "feedback": verifier["feedback"], "reasoning": decision.reason, "attempt": attempt.number,
            "contrastive": verifier.get("contrastive"), "is_fallback": verifier.get("is_fallback", False)})
        if decision.retry:
            state.attempt = _retry(step, attempt, limits, decision.reason)
            return Verdict(retry=True)
        response = _accept(step, attempt, limits, workflow, decision.reason)
        return Verdict(retry=False, response=response, degraded=bool(run.degraded),
                       reasons=tuple(run.degraded.get("issues", ())))


def _retry(step: Step, attempt: QualityAttempt, limits: RetrySettings, reason: str) -> QualityAttempt:
    """A new attempt of the same fire: its prompt is the healing prompt, its turns follow the journal's."""
    fire, run = step.fire, step.run
    number = attempt.number + 1
    healing = FailureAnalyzer.build_healing_prompt(
        original_query=fire.question, attempt=number,
        max_attempts=run.iterations if run.iterations > 1 else limits.max_attempts,
        contract_issues=attempt.contract["issues"], verifier_issues=attempt.verifier["issues"],
        verifier_feedback=attempt.verifier["feedback"])
    new = QualityAttempt.objects.create(
        workspace_id=fire.workspace_id, run=run, number=number, healing_prompt=healing,
        first_turn=FireTurn.objects.filter(fire=fire, phase=Fire.Phase.MAIN).count())
    run.attempt, run.state = number, QualityRun.State.RUNNING
    step.changed(run, "attempt", "state")
    step.emit("harness_retry", {"attempt": number, "reason": reason, "previous_score": attempt.combined})
    return new


def _accept(step: Step, attempt: QualityAttempt, limits: RetrySettings, workflow: str, reason: str) -> dict:
    """The best attempt's answer, to keep (the latest among equals; never one that repeats the healing
    prompt); degraded when the attempts ran out, or the gap persisted, without reaching good enough."""
    fire, run = step.fire, step.run
    attempts = [attempt] if attempt.number == 1 else [  # the current one as decided (saved with the step)
        attempt if earlier.number == attempt.number else earlier for earlier in run.attempts.order_by("number")]
    # an attempt that repeats the healing prompt is never the answer: the prompt is the harness's words,
    # not an answer to the user (the first attempt never saw it, so one is always left)
    answers = [a for a in attempts if a.contract.get("checks", {}).get("no_healing_prompt", True)] or attempts
    best = max(answers, key=lambda a: (a.combined if a.combined is not None else -1, a.number))
    if run.iterations > 1:
        fire.refresh_from_db(fields=["cost"])
        step.emit("harness_iteration_complete", {
            "iterations": len(attempts), "best_score": best.combined, "best_iteration": best.number,
            "accepted_count": sum(1 for a in attempts if (a.combined or 0) >= limits.good_enough_score),
            "total_duration_ms": round((timezone.now() - run.created_at).total_seconds() * 1000, 1),
            "estimated_cost_usd": float(fire.cost)})
    elif best.combined < limits.good_enough_score and (attempt.number >= limits.max_attempts or "Severe" in reason
                                                       or reason.startswith(CAPPED)):
        run.degraded = {"attempts_made": attempt.number, "best_score": best.combined, "workflow_type": workflow,
                        "issues": _degraded_reasons(fire, attempts)}
        step.emit("harness_degraded", run.degraded)
    run.scores = {}
    if EVENTS_BY_WORKFLOW.get(workflow):  # chat has no score: its contract is not evaluated again
        result, check = contract_evaluate(fire, run, best.response)
        scores = quality_scores(workflow, contract=result, verifier_score=best.verifier["score"], citations=check)
        run.scores = {name: score.as_event() for name, score in scores.items()}
    for name, score in run.scores.items():
        step.emit(name, score)
    run.final_attempt, run.verifier_score = best.number, best.verifier["score"]
    run.state, run.finished_at = QualityRun.State.DONE, timezone.now()
    sizes = fire_tool_result_sizes(fire_id=fire.pk)
    run.context_metrics = context_metrics((name, chars) for name, chars in sizes if name != "respond").as_event()
    profile_after_run(step, best)
    step.changed(run, "degraded", "scores", "final_attempt", "verifier_score", "state", "finished_at",
            "context_metrics", "profile")
    step.emit("context_metrics", run.context_metrics)
    if best.verifier.get("is_fallback"):
        return {**best.response, "is_fallback": True}
    return best.response


def _degraded_reasons(fire: Fire, attempts: list[QualityAttempt]) -> list[str]:
    """Why the answer is degraded, as the fire's verdict says it: the turn cap first when the fire reached
    it (the answer's shortcomings follow from it), then each fallback verdict's "[is_fallback] ..." (its
    checks could not run, so no issue says why), then the contract's and the verifier's issues of every
    attempt, sorted."""
    capped = [CAPPED] if fire.stop_reason == Fire.StopReason.MAX_TURNS else []
    fallbacks = dict.fromkeys(a.verifier["feedback"] for a in attempts if a.verifier.get("is_fallback"))
    issues = sorted({i for a in attempts for i in a.contract["issues"] + a.verifier["issues"]})
    return [*capped, *fallbacks, *issues]
