"""The workspace profile over runs (maturity, the milestone at 9 -> 10), feedback calibrating the
verifier (the beat task's rebuild reaching its system prompt), and the offline provider's run: every
event with no key."""

from harness.fires.models import Fire
from harness.fires.services import fire_create
from harness.quality import profile as quality_profile
from harness.quality import services, swarm
from harness.quality.models import Feedback, QualityAttempt, QualityRun
from harness.quality.profile import profile_invalidate
from harness.quality.tasks import quality_calibration
from harness.runtime.services import message_send
from lake.services import delta_create
from tests.harness.quality.conftest import (
    ANSWER,
    classification,
    harness_events,
    respond,
    verdict,
    verify_all,
)
from tests.harness.support import session_tick


def finished_runs(workspace, count, *, score=0.9):
    """`count` earlier quality runs of the workspace, done."""
    for _ in range(count):
        fire = fire_create(workspace=workspace, mode="introspective", question="earlier")
        run = QualityRun.objects.create(workspace=workspace, fire=fire, state="done", final_attempt=1,
                                        verifier_score=score, complexity={"workflow_type": "chat"})
        QualityAttempt.objects.create(workspace=workspace, run=run, number=1, combined=score,
                                      contract={"passed": True, "issues": []}, verifier={"score": score, "issues": []})


def ask(roles, session, question="What is the capital of France?", score=0.9):
    message_send(session=session, content=question)
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.main.reply(tool_calls=[respond()])
    roles.verifier.reply(verdict(score))
    roles.main.call_tool("skip", {"reason": "-"})
    assert session_tick(session_id=session.pk) == "ended"
    return QualityRun.objects.get(fire__session=session, fire__question=question)


def test_the_tenth_run_unlocks_the_developing_milestone(roles, session, workspace):
    finished_runs(workspace, 9)
    run = ask(roles, session)
    assert run.profile["maturity"] == "developing" and run.profile["total_runs"] == 10
    assert run.profile["quality_multiplier"] == 1.0
    events = harness_events(session)
    assert events.index("harness_workspace_profile") + 1 == events.index("milestone_unlocked")
    milestone = next(e for e in run.events if e["event"] == "milestone_unlocked")["data"]
    assert (milestone["level"], milestone["threshold"], milestone["total_runs"]) == ("developing", 10, 10)


def test_the_eleventh_run_unlocks_nothing(roles, session, workspace):
    finished_runs(workspace, 10)
    run = ask(roles, session)
    assert run.profile["total_runs"] == 11 and "milestone_unlocked" not in harness_events(session)


def test_the_profile_sums_the_most_recent_runs_and_counts_every_done_one(workspace, monkeypatch):
    # given three done runs, the oldest scored low with an issue, and a profile window of two runs
    finished_runs(workspace, 1, score=0.2)
    QualityAttempt.objects.update(contract={"passed": False, "issues": ["Output too short: 3 chars (minimum 50)"]})
    finished_runs(workspace, 2, score=0.8)
    monkeypatch.setattr(quality_profile, "PROFILE_WINDOW", 2)
    # when the profile is built, then its figures are the two most recent runs', its count every done run's
    profile_invalidate(workspace_id=workspace.pk)
    profile = quality_profile.workspace_profile(workspace_id=workspace.pk)
    assert (profile.total_runs, profile.avg_quality, profile.avg_verifier_score, profile.common_issues) == (
        3, 0.8, 0.8, [])
    monkeypatch.setattr(quality_profile, "PROFILE_WINDOW", 3)
    profile_invalidate(workspace_id=workspace.pk)
    profile = quality_profile.workspace_profile(workspace_id=workspace.pk)
    assert (profile.total_runs, profile.avg_quality, profile.common_issues) == (3, 0.6, ["Output too short"])


def test_a_mismatch_between_thumbs_and_verifier_reaches_the_verifiers_prompt(roles, session, workspace):
    # given an answer the verifier scored low and the user liked
    first = ask(roles, session, score=0.55)
    services.feedback_create(fire=first.fire, rating="up", comment="exactly what I needed")
    # when the beat task rebuilds the calibration
    assert quality_calibration() == 1
    # then the next verification carries it in its system prompt
    run = ask(roles, session, question="And of Italy?")
    system = roles.verifier.sent[-1].messages[0].content
    assert "Calibration from this workspace's feedback" in system
    assert "You scored 0.55 an answer the user liked (exactly what I needed)" in system
    assert run.verifier_score == 0.9


def test_feedback_agreeing_with_the_verifier_calibrates_nothing(roles, session, workspace):
    run = ask(roles, session, score=0.9)
    services.feedback_create(fire=run.fire, rating="up")
    assert services.calibration_rebuild(workspace_id=workspace.pk) == ""
    assert Feedback.objects.get().verifier_score == 0.9


def test_offline_every_role_answers_deterministically_and_every_event_shows(quality_on, session):
    # given no model at all: the offline provider answers every role
    message_send(session=session, content="What is the capital of France?")
    assert session_tick(session_id=session.pk) == "ended"
    run = QualityRun.objects.get(fire__session=session)
    assert run.complexity["level"] == "SIMPLE" and not run.complexity["is_fallback"]
    fire = Fire.objects.get(session=session)
    assert fire.status == "finished" and fire.response["body"].startswith("[offline]")
    verdict_ = run.attempts.get(number=run.final_attempt).verifier
    assert verdict_["feedback"].startswith("[offline] verified without a language model")
    events = harness_events(session)
    for name in ("harness_complexity", "harness_contract", "harness_verifier", "harness_workspace_profile",
                 "context_metrics"):
        assert name in events
    assert ANSWER not in fire.response["body"]


def run_to_end(session) -> None:
    """Tick the session, doing what the quality worker would each time the fire parks."""
    for _ in range(10):
        if session_tick(session_id=session.pk) == "ended":
            return
        run = QualityRun.objects.get(fire__session=session)
        if run.waiting_for == "swarm":
            for angle in run.swarm["specialists"]:
                swarm.specialist_run(run_id=run.pk, angle=angle)
            assert swarm.aggregate(run_id=run.pk, token=run.waiting_token)
        else:
            verify_all(run)
    raise AssertionError("the fire did not end")


def test_offline_a_complex_synthesis_shows_the_plan_the_swarm_and_contrastive_verification(quality_on, session,
                                                                                          workspace):
    quality_on.swarm_enabled = True
    quality_on.save()
    for n in range(6):
        delta_create(workspace=workspace, content=f"Zephyrine expedition note {n} about theme {n}")
    message_send(session=session, content="Compare the themes across all the zephyrine expedition notes")
    run_to_end(session)
    run = QualityRun.objects.get(fire__session=session)
    assert (run.complexity["level"], run.complexity["workflow_type"]) == ("COMPLEX", "synthesis")
    events = harness_events(session)
    for name in ("harness_plan_selected", "harness_swarm_activated", "harness_swarm_complete", "harness_rqs"):
        assert name in events, events
    assert run.swarm["specialists_succeeded"] == 5 and run.swarm["aggregate"].startswith("[offline]")
    assert set(run.attempts.get(number=1).verifier["contrastive"]) == {"accuracy", "completeness", "usefulness"}
    assert run.plan["plan"]["description"].startswith("[offline]")
