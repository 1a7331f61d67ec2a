"""The quality harness around a session's fire, in-process: a lone verifier is called in the fire's own
run; a contrastive group would run on the quality worker while the fire parks (here the group's
services are called by the test), and the next tick carries it on. The parallel runs on a real worker
are in test_workers.py."""

import pytest
from django.db import OperationalError

from fathom import outbox
from fathom.llm import Message, complete
from fathom.outbox import OutboxMessage
from fathom.tracing.selectors import trace_get
from festinger import cache as festinger_cache
from festinger.models import Concept
from festinger.services import insert_fact
from harness.fires.models import Fire, FireTurn
from harness.fires.services import fire_parked_resume
from harness.quality import agents, postflight, verification
from harness.quality.contracts import HEALING_MARKER
from harness.quality.models import QualityRun
from harness.runtime.models import Session, SessionEvent, Turn
from harness.runtime.services import harness_settings_get, message_send, sessions_sweep
from lake.models import Delta
from lake.services import delta_create
from tests.harness.quality.conftest import (
    ANSWER,
    RECOMMENDATION,
    classification,
    harness_events,
    recommendation_asked,
    respond,
    simple_chat_asked,
    ticked_to_its_end,
    verdict,
    verify_all,
)
from tests.harness.support import fire_write_kinds, session_tick


def test_a_simple_chat_question_is_classified_answered_verified_and_written_once(roles, session, monkeypatch):
    # given a chat question, a classifier, a main model that answers at once, a verifier that passes it
    simple_chat_asked(session, roles)
    # and the verifier's call watched (what the database says of the fire then), and what goes to the
    # quality worker
    seen, sent = [], []
    alone = postflight.verification_alone

    def watched(**kwargs):
        seen.append((Fire.objects.values_list("phase", "writes_done_at").get(session=session),
                     QualityRun.objects.values_list("waiting_for", "state").get(fire__session=session)))
        return alone(**kwargs)

    monkeypatch.setattr(postflight, "verification_alone", watched)
    monkeypatch.setattr(postflight, "verification_send", lambda **kwargs: sent.append(kwargs))
    # when the session ticks, the fire answers, its verifier is called in the same run, and it ends
    assert session_tick(session_id=session.pk) == "ended"
    fire = Fire.objects.get(session=session)
    run = QualityRun.objects.get(fire=fire)
    # then the answer was saved, unwritten, waiting for its verifier when the verifier was called
    assert seen == [(("verify", None), ("verifier", "verifying"))]
    assert (fire.status, fire.phase, fire.response["body"]) == ("finished", "done", ANSWER)
    assert Turn.objects.get(session=session).status == "ended"
    assert (run.state, run.final_attempt, run.verifier_score, run.degraded) == ("done", 1, 0.9, {})
    # one classifier call, one main turn and the review, one verifier call; nothing else, no task sent
    assert roles.calls() == {"classifier": 1, "main": 2, "verifier": 1} and sent == []
    assert fire.model_calls == 2  # the fire's own journal counts its main and review turns
    # the verifier saw a fresh context: the query, the answer, the artifacts, no tools, no workspace data
    sent = roles.verifier.sent[0]
    assert not sent.tools and len(sent.messages) == 2
    assert "What is the capital of France?" in sent.last_user_text and ANSWER in sent.last_user_text
    assert "Artifacts created: no artifacts" in sent.last_user_text
    # the quality preamble reached the main loop's system message
    assert "Quality requirements" in roles.main.sent[0].messages[0].content
    # the events, on the session stream and on the run, in order
    assert harness_events(session) == ["harness_complexity", "harness_contract", "harness_verifier",
                                       "harness_workspace_profile", "context_metrics"]
    assert [e["event"] for e in run.events] == harness_events(session)
    assert run.profile == {"maturity": "new", "total_runs": 1, "avg_quality": 0.95, "feedback_rate": 0.0,
                           "common_issues": [], "quality_multiplier": 0.85}
    assert run.context_metrics["total_tool_calls"] == 0 and run.scores == {}  # chat has no RQS / RecQS / DocQS
    contract = next(e for e in run.events if e["event"] == "harness_contract")["data"]
    assert contract["passed"] is True and contract["issues"] == []
    # the per-fire writes happened once
    assert fire_write_kinds(fire)["kind:card"] == 1


def test_a_parked_fire_comes_back_the_way_its_verifier_group_sends_it(roles, session):
    # given a recommendation question answered and parked for its contrastive verifiers, and their tasks
    # run as the quality worker runs them
    recommendation_asked(session, roles)
    assert session_tick(session_id=session.pk) == "parked"
    fire = Fire.objects.get(session=session)
    run = QualityRun.objects.get(fire=fire)
    assert (fire.status, fire.phase, run.waiting_for, run.state) == ("running", "verify", "verifier", "verifying")
    assert not fire.writes_done_at  # nothing is written before the answer is accepted
    verify_all(run)
    # when the tick the group's join sends comes back (fires.fire_parked_resume)
    back = {"session_id": session.pk, "workspace_id": session.workspace_id, "fire_id": fire.pk}
    assert fire_parked_resume(**back) == "ended"
    # then the fire is accepted, written once, its turn ended, as by a plain tick
    fire.refresh_from_db()
    assert (fire.status, fire.phase, fire.response["body"]) == ("finished", "done", RECOMMENDATION)
    assert fire_write_kinds(fire)["kind:card"] == 1 and Turn.objects.get(session=session).status == "ended"
    assert harness_events(session)[-4:] == ["harness_verifier", "harness_rec_qs", "harness_workspace_profile",
                                            "context_metrics"]
    assert QualityRun.objects.get(fire=fire).attempts.get().verifier["contrastive"] == {
        "accuracy": 0.9, "completeness": 0.9, "usefulness": 0.9}
    # and its trace is one: the second run under a fire.resume span of the first run's root, which ended
    trace = trace_get(workspace=fire.workspace, trace_id=fire.trace_id)
    (root,) = trace["spans"]
    resume = [child for child in root["children"] if child["name"] == "fire.resume"]
    assert root["status"] == "ok" and [span["attributes"]["attempt"] for span in resume] == [2]
    # and once more, with nothing parked, it is the usual tick, with nothing to do
    assert fire_parked_resume(**back) == "idle"
    assert roles.calls() == {"classifier": 1, "planner": 1, "main": 2, "verifier": 3}


def test_a_parking_fire_gives_its_claims_back_before_its_verifier_is_sent(roles, session, monkeypatch):
    # given a recommendation question, and its verifier group's send watched: what the database says of
    # the claims then
    recommendation_asked(session, roles)
    runners = []
    monkeypatch.setattr(postflight, "verification_send", lambda **kwargs: runners.append((
        Session.objects.values_list("runner", flat=True).get(pk=session.pk),
        Fire.objects.values_list("runner", flat=True).get(session=session))))
    # when the session ticks and the fire parks
    assert session_tick(session_id=session.pk) == "parked"
    # then its session and fire were free when its verifier went out (a quick one may tick it at once),
    # and they are still
    assert runners == [("", "")]
    assert Session.objects.get(pk=session.pk).runner == "" and Fire.objects.get(session=session).runner == ""


@pytest.mark.django_db(transaction=True)
def test_a_parked_fire_whose_sends_are_lost_is_carried_on_by_the_sweeps(roles, session, monkeypatch):
    # given a recommendation question, and a process that dies after each commit before publishing what
    # it sends (the verifier group and the way back are not recorded in the outbox: their sweeps send
    # them again)
    recommendation_asked(session, roles)
    lost = []
    monkeypatch.setattr(outbox, "_publish_or_record", lambda message, due_at: lost.append(message["task"]))
    assert session_tick(session_id=session.pk) == "parked"
    fire = Fire.objects.get(session=session)
    # when the resend sweep sends the verifier again, and the verifier's way back is lost too
    assert verification.runs_waiting_resend(older_than_seconds=0) == [QualityRun.objects.get(fire=fire).pk]
    verify_all(QualityRun.objects.get(fire=fire))
    assert lost == ["celery.chord", "celery.chord", "fires.fire_parked_resume"]
    assert not OutboxMessage.objects.exists()
    # then the sessions sweep ticks the parked fire's session, and the fire ends verified
    assert session.pk in sessions_sweep()
    assert session_tick(session_id=session.pk) == "ended"
    fire.refresh_from_db()
    run = QualityRun.objects.get(fire=fire)
    assert (fire.status, fire.response["body"], run.state, run.verifier_score) == (
        "finished", RECOMMENDATION, "done", 0.9)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("carried_on_by", ["the retried task", "the resend sweep"])
def test_a_fire_whose_run_dies_before_its_lone_verifier_answers_is_verified_once(roles, session, monkeypatch,
                                                                                 carried_on_by):
    # given a chat question whose fire's run loses its database once its answer is saved, before its
    # verifier is called
    simple_chat_asked(session, roles)
    alone = postflight.verification_alone

    def lost(**kwargs):
        monkeypatch.setattr(postflight, "verification_alone", alone)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(postflight, "verification_alone", lost)
    with pytest.raises(OperationalError):
        session_tick(session_id=session.pk)
    run = QualityRun.objects.get(fire__session=session)
    assert (run.fire.status, run.fire.phase, run.waiting_for) == ("running", "verify", "verifier")
    # when the fire is carried on: its task retried, or (its task lost) the resend sweep's verifier, on the
    # quality worker, whose way back ticks it
    if carried_on_by == "the resend sweep":
        monkeypatch.setattr(outbox, "_publish_or_record", lambda message, due_at: None)
        assert verification.runs_waiting_resend(older_than_seconds=0) == [run.pk]
        brief = verification.verifier_brief(run.fire, run.attempts.get().response)
        assert verification.verification_alone(run_id=run.pk, attempt=1, token=run.waiting_token, brief=brief)
        assert fire_parked_resume(session_id=session.pk, workspace_id=session.workspace_id,
                                  fire_id=run.fire_id) == "ended"
    else:
        assert session_tick(session_id=session.pk) == "ended"
    # then the fire ends verified, its verifier called once
    run.refresh_from_db()
    assert (run.fire.status, run.fire.response["body"], run.state, run.verifier_score) == (
        "finished", ANSWER, "done", 0.9)
    assert roles.calls() == {"classifier": 1, "main": 2, "verifier": 1}


def test_a_verifier_that_fails_gives_the_fallback_verdict_and_the_fire_still_answers(roles, session):
    message_send(session=session, content="What is the capital of France?")
    roles.classifier.fail("server_error")  # the classifier's fallback classifies by keywords: chat
    roles.main.reply(tool_calls=[respond()])
    roles.verifier.fail("authentication")  # not retried: the verdict is the fallback
    roles.main.reply(tool_calls=[respond()])  # the retry the failed verdict asks for
    roles.verifier.reply(verdict(0.9))
    roles.main.call_tool("skip", {"reason": "-"})
    assert session_tick(session_id=session.pk) == "ended"
    run = QualityRun.objects.get(fire__session=session)
    assert run.complexity["is_fallback"] and run.complexity["workflow_type"] == "chat"
    attempt = run.attempts.get(number=1)
    assert attempt.verifier["score"] == 0.0 and attempt.verifier["feedback"].startswith("[is_fallback]")
    assert not attempt.verifier["passed"] and attempt.decision["retry"]
    assert (run.final_attempt, run.fire.status, run.fire.response["body"]) == (2, "finished", ANSWER)


def test_a_verifier_that_is_down_leaves_a_degraded_verdict_that_says_it_could_not_run(api, roles, session, settings):
    # given a chat question whose answer passes its contract, and a verifier whose model is down
    # (a server error, each call made once)
    settings.FATHOM_LLM_MAX_ATTEMPTS = 1
    message_send(session=session, content="What is the capital of France?")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    for _ in range(2):  # the fallback verdict scores 0, so the retry gates trigger (seed 001): two attempts
        roles.main.reply(tool_calls=[respond()])
        roles.verifier.fail("server_error")
    # when the session ticks until the fire ends
    assert session_tick(session_id=session.pk) == "ended"
    fire = Fire.objects.get(session=session)
    # then the verdict a client reads is degraded, and its reasons say the verifier could not run
    body = api.get(f"/v1/fires/{fire.pk}").json()
    assert body["verdict"]["status"] == "degraded"
    assert body["verdict"]["reasons"] and body["verdict"]["reasons"][0].startswith(
        "[is_fallback] the standard verifier could not run")
    # and the main model was called once per attempt (a degraded answer has no review pass)
    assert roles.calls() == {"classifier": 1, "main": 2, "verifier": 2}


def test_a_fire_of_a_workspace_without_the_harness_runs_as_before(scripted_llm, session):
    message_send(session=session, content="hi")
    scripted_llm.reply(tool_calls=[respond()])
    scripted_llm.call_tool("skip", {"reason": "-"})
    assert session_tick(session_id=session.pk) == "ended"
    assert not QualityRun.objects.exists()
    assert list(FireTurn.objects.values_list("phase", flat=True)) == ["main", "review"]


def test_a_failed_attempt_is_retried_with_the_healing_prompt_and_the_answer_written_once(roles, session, workspace):
    # given two moments in the lake, and a synthesis question about them
    rover = delta_create(workspace=workspace, content="The zephyrine rover crossed the dunes in March.")
    lake = delta_create(workspace=workspace, content="The zephyrine lake froze over in April.")
    message_send(session=session, content="Synthesise what we know about the zephyrine rover and lake")
    roles.classifier.reply(classification("MEDIUM", "synthesis"))
    # attempt 1: searches, then answers thinly, citing a quote that is not in the delta
    roles.main.call_tool("semantic", {"query": "zephyrine"})
    roles.main.reply(tool_calls=[respond("Both happened.", cards=[
        {"kind": "insight", "body": "The rover flew.", "citations": [{"id": rover.pk, "quote": "the rover flew"}]}])])
    roles.verifier.reply(verdict(0.3, passed=False, issues=["Claims lack attribution"], feedback="Quote the sources."))
    # attempt 2: one insight per source, each quoting it
    good = [{"kind": "insight", "body": "The rover crossed the dunes in March.",
             "citations": [{"id": rover.pk, "quote": "crossed the dunes in March"}]},
            {"kind": "insight", "body": "The lake froze in April, a month after the crossing.",
             "citations": [{"id": lake.pk, "quote": "froze over in April"}]}]
    body = (f"## Findings\n- The rover crossed the dunes in March [{rover.pk}].\n"
            f"- The lake froze over in April [{lake.pk}].")
    roles.main.reply(tool_calls=[respond(body, cards=good)])
    roles.verifier.reply(verdict(0.9))
    roles.main.call_tool("skip", {"reason": "-"})
    # when the session ticks: attempt 1 is verified, its verdict asks for a retry, attempt 2 is verified,
    # and the fire ends
    assert session_tick(session_id=session.pk) == "ended"
    run = QualityRun.objects.get(fire__session=session)
    first = run.attempts.get(number=1)
    assert not first.contract["passed"]
    assert f'Unfounded citation [{rover.pk}]: quote not found in the delta ("the rover flew")' in first.contract[
        "issues"]
    # its one citation is unfounded, so it used no source at all
    assert "Citations required but none found — insights must include direct quotes from sources" in first.contract[
        "issues"]
    assert run.attempt == 2 and run.attempts.get(number=1).decision == {
        "retry": True, "reason": "Contract failed — retrying with healing prompt"}
    fire = Fire.objects.get(session=session)
    # then the second attempt read the healing prompt (a harness note) after its first attempt's turns
    healing = roles.main.sent[2].messages[-1].content
    assert healing.startswith("[harness] Synthesise what we know about the zephyrine rover and lake\n"
                              "[SELF-CORRECTION: Attempt 2 of 3]\n")
    assert "MISSING REQUIREMENT: Citations required but none found" in healing
    assert "QUALITY ISSUE: Claims lack attribution\nReviewer feedback: Quote the sources." in healing
    assert any(m.role == "tool" and rover.pk in m.content for m in roles.main.sent[2].messages)
    # the answer is the second attempt's, its artifacts written once, with what they cite
    assert fire.response["body"] == body and run.final_attempt == 2 and not run.degraded
    kinds = fire_write_kinds(fire)
    assert (kinds["kind:card"], kinds["kind:insight"]) == (1, 2)
    assert set(Delta.objects.filter(tags__contains=["kind:insight"]).values_list("content", flat=True)) == {
        card["body"] for card in good}
    assert Delta.objects.filter(tags__contains=["kind:insight", f"cites:{lake.pk}"]).count() == 1
    # the calls: 1 classifier, 4 main (search, two answers, the review), 2 verifiers; the planner call is
    # the lake search's own (its compositional plan), not the harness's: a MEDIUM question is not planned
    assert roles.calls() == {"classifier": 1, "main": 4, "verifier": 2, "planner": 1}
    assert roles.planner.sent[0].response_format["json_schema"]["name"] != "plans"
    assert harness_events(session) == [
        "harness_complexity", "harness_contract", "harness_verifier",
        "harness_retry", "harness_contract", "harness_verifier", "harness_rqs", "harness_workspace_profile",
        "context_metrics"]
    assert run.scores["harness_rqs"]["grade"] in ("A", "B")
    assert run.context_metrics["calls_per_tool"] == {"semantic": 1}


def test_when_the_attempts_run_out_the_best_attempt_answers_degraded(roles, session):
    message_send(session=session, content="hello there")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.main.reply(tool_calls=[respond("Hi.")])  # too short: chat asks 50 characters (x 0.85 for a new workspace, floored at 50)
    roles.verifier.reply(verdict(0.3, passed=False, issues=["Terse"]))
    roles.main.reply(tool_calls=[respond("Hi again.")])
    roles.verifier.reply(verdict(0.35, passed=False, issues=["Still terse"]))
    run = ticked_to_its_end(session)
    fire = run.fire
    assert fire.response["body"] == "Hi again." and run.final_attempt == 2
    issues = ["Output too short: 3 chars (minimum 50)", "Output too short: 9 chars (minimum 50)", "Still terse",
              "Terse"]
    assert run.degraded == {"attempts_made": 2, "best_score": 0.175, "workflow_type": "chat", "issues": issues}
    assert run.attempts.get(number=2).decision == {"retry": False, "reason": "Max attempts reached"}
    events = harness_events(session)
    assert events.index("harness_retry") < events.index("harness_degraded") < events.index("context_metrics")
    # the answer is delivered marked degraded, with the reasons; nothing of it became memory, and no
    # review pass consolidated its working set
    assert (fire.verdict, fire.verdict_reasons) == ("degraded", issues)
    output = SessionEvent.objects.get(session=session, kind=SessionEvent.Kind.ASSISTANT_OUTPUT).data
    assert output["body"] == "Hi again." and output["verdict"] == {"status": "degraded", "reasons": issues}
    assert output["card_id"] is None and fire.writes["withheld"] == ["card", "artifacts", "affirms", "refutes",
                                                                     "qa_marker"]
    assert fire_write_kinds(fire)["kind:card"] == 0 and fire.review["outcome"] == "skip"
    assert roles.calls() == {"classifier": 1, "main": 2, "verifier": 2}


def test_an_attempt_that_repeats_the_healing_prompt_is_never_the_answer(roles, session):
    # given a retry whose answer echoes the harness's healing prompt and so scores above the first's
    message_send(session=session, content="hello there")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.main.reply(tool_calls=[respond("Hi.")])
    roles.verifier.reply(verdict(0.3, passed=False, issues=["Terse"]))
    echo = f"{HEALING_MARKER} Attempt 2 of 2] Your previous attempt had quality issues: answer properly this time."
    roles.main.reply(tool_calls=[respond(echo)])
    roles.verifier.reply(verdict(0.9))
    run = ticked_to_its_end(session)
    # then the user gets the first attempt's answer, marked degraded, and never the harness's words
    assert run.attempts.get(number=2).combined > run.attempts.get(number=1).combined
    assert run.final_attempt == 1 and run.degraded["attempts_made"] == 2
    output = SessionEvent.objects.get(session=session, kind=SessionEvent.Kind.ASSISTANT_OUTPUT).data
    assert output["body"] == "Hi." and output["verdict"]["status"] == "degraded"


def test_a_workspaces_contract_thresholds_hold_its_answers_to_its_bar(roles, session, workspace, other_workspace,
                                                                     api_client_for):
    # given a workspace that asks 200 characters of a chat answer (over REST), and another that asks nothing
    operator = api_client_for(workspace, "operator")
    changed = operator.patch("/v1/quality/settings", {"contracts": {"chat": {"min_output_chars": 200}}},
                             format="json")
    assert changed.status_code == 200 and changed.json()["contracts"] == {"chat": {"min_output_chars": 200}}
    assert api_client_for(other_workspace, "operator").get("/v1/quality/settings").json()["contracts"] == {}
    # when a 64-character answer is given
    message_send(session=session, content="hello there")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.main.reply(tool_calls=[respond("Hello! I am here and ready to help with whatever you need today.")])
    roles.verifier.reply(verdict(0.9))
    roles.main.reply(tool_calls=[respond("Hello! I am here and ready to help with whatever you need today.")])
    roles.verifier.reply(verdict(0.9))
    assert session_tick(session_id=session.pk) == "ended"
    run = QualityRun.objects.get(fire__session=session)
    # then its contract is the workspace's, scaled by the new workspace's multiplier (0.85), and it fails
    contract = run.attempts.get(number=1).contract
    assert contract["contract"]["min_output_chars"] == 170 and not contract["passed"]
    assert "Output too short: 64 chars (minimum 170)" in contract["issues"]
    # and a null removes the threshold again
    cleared = operator.patch("/v1/quality/settings", {"contracts": {"chat": {"min_output_chars": None}}},
                             format="json")
    assert cleared.json()["contracts"] == {}


def test_an_answer_forced_at_the_turn_cap_is_not_retried(roles, session, workspace):
    # given a fire capped at two turns whose model never responds, and a verifier that fails the answer
    limits = harness_settings_get(workspace_id=workspace.pk)
    limits.max_turns_per_fire = 2
    limits.save()
    message_send(session=session, content="hello there")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    for step in range(2):
        roles.main.call_tool("view_full", {"delta_id": f"feed{step}"})
    roles.main.reply("Hi.")  # the forced turn's text is the answer
    roles.verifier.reply(verdict(0.3, passed=False, issues=["Terse"]))
    # when the session ticks
    run = ticked_to_its_end(session)
    # then the capped answer is kept, degraded, with its stop reason, and the main loop ran once
    fire = run.fire
    assert (fire.status, fire.stop_reason, fire.response["body"]) == ("finished", "max_turns", "Hi.")
    assert run.attempts.count() == 1
    assert run.attempts.get().decision == {"retry": False, "reason": "The fire reached its turn cap: not retried"}
    assert run.degraded["attempts_made"] == 1 and fire.verdict == "degraded"
    # and the verdict's reasons name the turn cap before what the answer lacks
    assert fire.verdict_reasons[0] == "The fire reached its turn cap" and "Terse" in fire.verdict_reasons[1:]
    assert roles.calls() == {"classifier": 1, "main": 3, "verifier": 1}  # a degraded answer has no review pass


def test_the_verifier_gets_no_recollection_of_the_workspace_where_the_main_model_does(roles, workspace):
    # given a world model that would inject what it knows about "gnommoweb" into every call
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    Concept.objects.update_or_create(workspace=workspace, token="gnommoweb", defaults={"encounter_count": 50})
    festinger_cache.world_reload(workspace.pk)
    try:
        roles.main.reply("fine")
        roles.verifier.reply(verdict(0.9))
        complete(workspace=workspace, role="main", messages=[Message.user("What is gnommoweb?")])
        # when the verifier judges an answer about it
        agents.verify(workspace=workspace, perspective="standard", query="What is gnommoweb?",
                      output="gnommoweb is a repo", artifact_summary="no artifacts")
    finally:
        festinger_cache.forget(workspace.pk)
    # then only the main model's prompt carried the recollection: the verifier's context is fresh
    assert "<recollection>" in roles.main.sent[0].messages[0].content
    assert all("<recollection>" not in m.content for m in roles.verifier.sent[0].messages)


def test_deep_synthesis_iteration_makes_every_pass_and_keeps_the_best(roles, session, api):
    # given a message asking for three iterations, each pass good enough on its own
    response = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "What is the capital of France?",
                                                                 "iterations": 3}, format="json")
    assert response.status_code == 202, response.content
    roles.classifier.reply(classification("SIMPLE", "chat"))
    for n, score in enumerate((0.8, 0.95, 0.7), 1):
        roles.main.reply(tool_calls=[respond(f"{ANSWER} (pass {n})")])
        roles.verifier.reply(verdict(score))
    roles.main.call_tool("skip", {"reason": "-"})
    # when the session ticks through its three passes
    run = ticked_to_its_end(session)
    # then the second pass, the best, is the answer, and one event sums the iterations up
    assert run.iterations == 3 and run.final_attempt == 2 and not run.degraded
    assert run.fire.response["body"].endswith("(pass 2)")
    summary = next(e for e in run.events if e["event"] == "harness_iteration_complete")["data"]
    assert (summary["iterations"], summary["best_score"], summary["best_iteration"], summary["accepted_count"]) == (
        3, 0.975, 2, 3)
    assert harness_events(session).count("harness_retry") == 2
    assert roles.calls() == {"classifier": 1, "main": 4, "verifier": 3}


@pytest.mark.parametrize("iterations", [0, 6, "x", 2.5, None])
def test_iterations_outside_one_to_five_are_a_400(api, session, iterations):
    response = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "q", "iterations": iterations},
                        format="json")
    assert response.status_code == 400 and "iterations" in response.json()["error"]["details"]


def test_the_stream_checks_run_over_the_answer_at_their_checkpoints_once_per_run(roles, session):
    message_send(session=session, content="Synthesise the themes of my notes")
    roles.classifier.reply(classification("MEDIUM", "synthesis"))
    refusal = "Unfortunately I cannot see your notes. " + "Plain prose without any structure at all. " * 60
    roles.main.reply(tool_calls=[respond(refusal)])
    roles.verifier.reply(verdict(0.2, passed=False, issues=["a refusal"]))
    # and a retry that refuses the same way
    roles.main.reply(tool_calls=[respond(refusal)])
    roles.verifier.reply(verdict(0.2, passed=False, issues=["a refusal"]))
    assert session_tick(session_id=session.pk) == "ended"
    # then the first attempt's checkpoints alerted, and the retry's did not again
    run = QualityRun.objects.get(fire__session=session)
    alerts = run.attempts.get(number=1).stream_alerts
    assert [(a["checkpoint"], a["severity"]) for a in alerts] == [(500, "critical"), (2000, "warning")]
    assert run.attempts.count() == 2 and run.attempts.get(number=2).stream_alerts == []
    assert harness_events(session).count("harness_stream_alert") == 2


REFUSAL = "I can't find anything in the notes about the northern shore, so I cannot compare them. " * 12


def test_a_stream_alert_reaches_the_session_while_the_answer_is_written(roles, session):
    # given a main model that streams a refusal (600 characters and more), word by word, as plain text
    message_send(session=session, content="What do the notes say about the northern shore?")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.main.reply(REFUSAL)
    roles.verifier.reply(verdict(0.9))
    roles.main.call_tool("skip", {"reason": "-"})
    # when the fire runs to its end
    run = ticked_to_its_end(session)
    # then the 500-character check alerted once, while the answer was being written: after the first
    # streamed delta, before the answer's turn was committed, its contract and the fire's end
    events = list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", "data"))
    kinds = [kind for kind, _ in events]
    assert kinds.count("harness_stream_alert") == 1
    alert_at = kinds.index("harness_stream_alert")
    alert = events[alert_at][1]
    assert (alert["severity"], alert["checkpoint"], alert["attempt"]) == ("critical", 500, 1)
    first_delta = next(n for n, (kind, data) in enumerate(events) if kind == "AgentStream" and "delta" in data)
    answer_committed = next(n for n, (kind, data) in enumerate(events) if kind == "AgentStream" and data.get("text"))
    assert first_delta < alert_at < answer_committed < kinds.index("harness_contract") < kinds.index("TurnEnded")
    # and the attempt keeps it, the post-flight's own check of the final answer adding none
    assert [a["checkpoint"] for a in run.attempts.get(number=1).stream_alerts] == [500]
