"""The quality harness around a session's fire, in-process: the fire parks while its verifier group
would run on the quality worker (here the group's services are called by the test), and the next tick
carries it on. The parallel runs on a real worker are in test_workers.py."""


from harness.fires.models import Fire, FireTurn
from harness.quality import flow
from harness.quality.models import QualityRun
from harness.runtime.models import SessionEvent, Turn
from harness.runtime.services import message_send
from tests.harness.quality.conftest import classification, verdict
from tests.harness.support import fire_write_kinds, session_tick

ANSWER = "Paris is the capital of France, and has been for most of the last thousand years."


def respond(body=ANSWER, **extra):
    return {"name": "respond", "arguments": {"body": body, **extra}}


def verify_all(run: QualityRun) -> None:
    """What the quality worker does for the run's waiting chord: each verifier, then the join."""
    run.refresh_from_db()
    for perspective in flow.perspectives_for(run):
        flow.verification_run(run_id=run.pk, attempt=run.attempt, perspective=perspective)
    assert flow.verification_join(run_id=run.pk, attempt=run.attempt, token=run.waiting_token)


def harness_events(session) -> list[str]:
    return [kind for kind in SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True)
            if kind.startswith("harness_") or kind in ("context_metrics", "milestone_unlocked")]


def test_a_simple_chat_question_is_classified_answered_verified_and_written_once(roles, session):
    # given a chat question, a classifier, a main model that answers at once, a verifier that passes it
    message_send(session=session, content="What is the capital of France?")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.main.reply(tool_calls=[respond()])
    roles.verifier.reply(verdict(0.9))
    roles.main.call_tool("skip", {"reason": "nothing to name"})
    # when the session ticks, the fire answers and parks, waiting for its verifier
    assert session_tick(session_id=session.pk) == "parked"
    fire = Fire.objects.get(session=session)
    run = QualityRun.objects.get(fire=fire)
    assert (fire.status, fire.phase) == ("running", "verify")
    assert (run.waiting_for, run.state) == ("verifier", "verifying")
    assert Turn.objects.get(session=session).status == "running"
    assert not fire.writes_done_at  # nothing is written before the answer is accepted
    # and when the verifier group has answered, the next tick carries the fire on to its end
    verify_all(run)
    assert session_tick(session_id=session.pk) == "ended"
    fire.refresh_from_db()
    run.refresh_from_db()
    assert (fire.status, fire.phase, fire.response["body"]) == ("finished", "done", ANSWER)
    assert (run.state, run.final_attempt, run.verifier_score, run.degraded) == ("done", 1, 0.9, {})
    # then: one classifier call, one main turn and the review, one verifier call; nothing else
    assert roles.calls() == {"classifier": 1, "main": 2, "verifier": 1}
    assert fire.model_calls == 2  # the fire's own journal counts its main and review turns
    # the verifier saw a fresh context: the query, the answer, the artifacts, no tools, no workspace data
    sent = roles.verifier.sent[0]
    assert not sent.tools and len(sent.messages) == 2
    assert "What is the capital of France?" in sent.last_user_text and ANSWER in sent.last_user_text
    assert "Artifacts created: no artifacts" in sent.last_user_text
    # the quality preamble reached the main loop's system message
    assert "Quality requirements" in roles.main.sent[0].messages[0].content
    # the events, on the session stream and on the run, in order
    assert harness_events(session) == ["harness_complexity", "harness_contract", "harness_verifier"]
    assert [e["event"] for e in run.events] == harness_events(session)
    contract = next(e for e in run.events if e["event"] == "harness_contract")["data"]
    assert contract["passed"] is True and contract["issues"] == []
    # the per-fire writes happened once
    assert fire_write_kinds(fire)["kind:card"] == 1


def test_a_verifier_that_fails_gives_the_fallback_verdict_and_the_fire_still_answers(roles, session):
    message_send(session=session, content="What is the capital of France?")
    roles.classifier.fail("server_error")  # the classifier's fallback classifies by keywords: chat
    roles.main.reply(tool_calls=[respond()])
    roles.verifier.fail("authentication")  # not retried: the verdict is the fallback
    roles.main.call_tool("skip", {"reason": "-"})
    assert session_tick(session_id=session.pk) == "parked"
    run = QualityRun.objects.get(fire__session=session)
    assert run.complexity["is_fallback"] and run.complexity["workflow_type"] == "chat"
    verify_all(run)
    attempt = run.attempts.get(number=1)
    assert attempt.verifier["score"] == 0.0 and attempt.verifier["feedback"].startswith("[is_fallback]")
    assert not attempt.verifier["passed"]


def test_a_fire_of_a_workspace_without_the_harness_runs_as_before(scripted_llm, session):
    message_send(session=session, content="hi")
    scripted_llm.reply(tool_calls=[respond()])
    scripted_llm.call_tool("skip", {"reason": "-"})
    assert session_tick(session_id=session.pk) == "ended"
    assert not QualityRun.objects.exists()
    assert list(FireTurn.objects.values_list("phase", flat=True)) == ["main", "review"]
