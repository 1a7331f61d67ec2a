"""COMPLEX questions: the planner's candidates and the selected plan on the plan board (with subtask
events), contrastive verification (three perspectives, the minimum, tagged issues), and the swarm
(specialists and aggregator, one failing specialist tolerated), in-process: the test runs what the
quality worker would."""

import json

import pytest

from harness.fires.models import Fire
from harness.fires.tools.base import REGISTRY, Tool, register
from harness.quality import agents, swarm
from harness.quality.models import QualityRun
from harness.quality.services import quality_settings_update
from harness.quality.verification import perspectives_for
from harness.runtime.profiles import user_profile_create
from harness.runtime.services import message_send, session_create
from lake.models import Delta
from lake.services import delta_create
from tests.harness.quality.conftest import classification, harness_events, verdict, verify_all
from tests.harness.support import session_tick

QUESTION = "Compare the themes across all of the zephyrine expedition notes"


def plans(*candidates) -> str:
    return json.dumps({"plans": list(candidates)})


def plan(description, workflow="synthesis", turns=3, subtasks=("gather the notes", "compare the themes")):
    return {"description": description, "prompt_modifier": "Cite every note you use.", "estimated_turns": turns,
            "suggested_workflow": workflow, "subtasks": [{"title": t, "parallel": False} for t in subtasks]}


def notes(workspace, count=5):
    return [delta_create(workspace=workspace, content=f"Zephyrine expedition note {n}: the team saw theme {n}.")
            for n in range(count)]


def insight_cards(deltas):
    return [{"kind": "insight", "body": f"Theme {n} recurs.", "citations": [{"id": d.pk, "quote": f"theme {n}"}]}
            for n, d in enumerate(deltas)]


@pytest.fixture
def notes_tool(workspace):
    """A tool returning the workspace's notes with their ids (what a retrieval tool returns)."""
    register(Tool(name="notes", description="the notes", parameters={"type": "object", "properties": {}},
                  run=lambda ctx, args: json.dumps([{"id": d.pk, "content": d.content} for d in
                                                    Delta.objects.filter(workspace=ctx.fire.workspace)])))
    yield
    REGISTRY.pop("notes", None)


def test_a_complex_synthesis_is_planned_and_verified_contrastively(roles, session, workspace, notes_tool):
    # given five notes and a COMPLEX synthesis question
    deltas = notes(workspace)
    message_send(session=session, content=QUESTION)
    roles.classifier.reply(classification("COMPLEX", "synthesis"))
    roles.planner.reply(plans(plan("Answer from memory", workflow="chat", turns=1),
                              plan("Compare the themes across the expedition notes, all of them")))
    roles.main.call_tool("notes", {"plan_step": 1})
    roles.main.call_tool("notes", {"plan_step": 2})
    body = "## Themes\n" + "\n".join(f"- theme {n} [{d.pk}]" for n, d in enumerate(deltas)) + "\n" + "x" * 100
    roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": body, "cards": insight_cards(deltas)}}])
    for score, issue in ((0.9, "Claim 2 is loose"), (0.7, "Theme 4 thin"), (0.8, "")):
        roles.verifier.reply(verdict(score, issues=[issue] if issue else []))
    roles.main.call_tool("skip", {"reason": "-"})
    # when the session ticks, the fire plans, works the plan, answers and parks for its three verifiers
    assert session_tick(session_id=session.pk) == "parked"
    run = QualityRun.objects.get(fire__session=session)
    fire = Fire.objects.get(session=session)
    # then the second candidate won (coverage, feasibility and alignment beat one turn fewer)
    assert run.plan["plan"]["description"] == "Compare the themes across the expedition notes, all of them"
    assert run.plan["candidates_count"] == 2 and not run.plan["fallback"]
    assert [s["text"] for s in fire.plan] == ["gather the notes", "compare the themes"]
    assert "Cite every note you use." in roles.main.sent[0].messages[0].content
    assert perspectives_for(run) == ("accuracy", "completeness", "usefulness")
    verify_all(run)
    assert run.attempts.get(number=1).contract["passed"], run.attempts.get(number=1).contract
    assert session_tick(session_id=session.pk) == "ended"
    run.refresh_from_db()
    verdict_ = run.attempts.get(number=1).verifier
    assert verdict_["score"] == 0.7 and verdict_["contrastive"] == {"accuracy": 0.9, "completeness": 0.7,
                                                                    "usefulness": 0.8}
    assert verdict_["issues"] == ["[accuracy] Claim 2 is loose", "[completeness] Theme 4 thin"]
    # each perspective's own prompt
    systems = sorted(s.messages[0].content.split(" ")[5] for s in roles.verifier.sent)
    assert systems == ["ACCURACY", "COMPLETENESS", "USEFULNESS"]
    events = harness_events(session)
    assert events[:2] == ["harness_complexity", "harness_plan_selected"]
    assert events.count("harness_subtask_start") == 2 and events.count("harness_subtask_done") == 2
    assert "harness_rqs" in events
    # calls per role: classifier 1, planner 1, main 4 (two tool turns, the answer, the review), verifier 3
    assert roles.calls() == {"classifier": 1, "planner": 1, "main": 4, "verifier": 3}


def test_a_failing_planner_gives_the_default_plan(roles, session):
    message_send(session=session, content=QUESTION)
    roles.classifier.reply(classification("COMPLEX", "synthesis"))
    roles.planner.reply("not json at all")
    roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "x"}}])
    assert session_tick(session_id=session.pk) == "parked"
    run = QualityRun.objects.get(fire__session=session)
    assert run.plan["plan"]["description"] == "Execute synthesis workflow directly" and run.plan["fallback"]


def test_the_swarm_tolerates_a_failing_specialist_and_its_aggregate_feeds_the_main_pass(roles, session, workspace,
                                                                                       quality_on):
    # given a workspace with the swarm on, five notes, and a synthesis question
    quality_on.swarm_enabled, quality_on.swarm_specialists = True, ["evidence", "gaps", "patterns"]
    quality_on.save()
    quality_settings_update(workspace_id=workspace.pk, retry_policies={"synthesis": {"max_attempts": 1}})
    notes(workspace)
    message_send(session=session, content=QUESTION)
    roles.classifier.reply(classification("MEDIUM", "synthesis"))
    # when the session ticks, the swarm is activated and the fire parks before its main pass
    assert session_tick(session_id=session.pk) == "parked"
    run = QualityRun.objects.get(fire__session=session)
    assert run.waiting_for == "swarm" and len(run.sources) == 5
    assert not roles.main.sent
    # and the specialists run (one fails), then the aggregator
    roles.specialist.reply("evidence: notes agree").fail("bad_request").reply("patterns: themes recur")
    for angle in ["evidence", "gaps", "patterns"]:
        swarm.specialist_run(run_id=run.pk, angle=angle)
    roles.aggregator.reply("MERGED BRIEF: themes recur, notes agree")
    assert swarm.aggregate(run_id=run.pk, token=run.waiting_token)
    run.refresh_from_db()
    assert run.swarm["specialists_succeeded"] == 2 and run.swarm["aggregator_succeeded"] is True
    assert run.swarm["aggregate"] == "MERGED BRIEF: themes recur, notes agree"
    # then the main pass reads the aggregate (its answer verified once: the workspace gives synthesis one attempt)
    roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "x"}}])
    roles.verifier.reply(verdict(0.9))
    assert session_tick(session_id=session.pk) == "ended"
    assert "MERGED BRIEF" in roles.main.sent[0].messages[-1].content
    events = harness_events(session)
    assert events[:2] == ["harness_complexity", "harness_swarm_activated"]
    assert "harness_swarm_complete" in events
    # each specialist saw the sources; calls: 3 specialists, 1 aggregator
    assert all("Zephyrine expedition note" in s.last_user_text for s in roles.specialist.sent)
    assert (len(roles.specialist.sent), len(roles.aggregator.sent)) == (3, 1)


def test_a_swarm_whose_specialists_all_fail_lets_the_main_pass_run_without_it(roles, session, workspace, quality_on):
    quality_on.swarm_enabled, quality_on.swarm_specialists = True, ["a", "b"]
    quality_on.save()
    notes(workspace)
    message_send(session=session, content=QUESTION)
    roles.classifier.reply(classification("MEDIUM", "synthesis"))
    assert session_tick(session_id=session.pk) == "parked"
    run = QualityRun.objects.get(fire__session=session)
    roles.specialist.fail("bad_request").fail("bad_request")
    for angle in ["a", "b"]:
        swarm.specialist_run(run_id=run.pk, angle=angle)
    assert swarm.aggregate(run_id=run.pk, token=run.waiting_token)
    run.refresh_from_db()
    assert run.swarm["specialists_succeeded"] == 0 and not run.swarm["aggregator_succeeded"]
    assert not roles.aggregator.sent and run.waiting_for == ""


def test_a_user_who_opted_out_of_the_swarm_gets_none_in_a_workspace_that_runs_it(roles, workspace, quality_on):
    # given the swarm on, five notes, and a session of a user whose preferences say "swarm": false
    quality_on.swarm_enabled = True
    quality_on.save()
    notes(workspace)
    user_profile_create(workspace=workspace, slug="ada", preferences={"swarm": False})
    session = session_create(workspace=workspace, user="ada")
    message_send(session=session, content=QUESTION)
    roles.classifier.reply(classification("MEDIUM", "synthesis"))
    quality_settings_update(workspace_id=workspace.pk, retry_policies={"synthesis": {"max_attempts": 1}})
    roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "x"}}])
    roles.verifier.reply(verdict(0.9))
    # when the session ticks, the main pass runs at once: no swarm
    assert session_tick(session_id=session.pk) == "ended"
    run = QualityRun.objects.get(fire__session=session)
    assert run.swarm == {} and run.sources == [] and roles.calls() == {"classifier": 1, "main": 1, "verifier": 1}
    assert "harness_swarm_activated" not in harness_events(session)


def test_contrastive_combination_is_the_minimum_with_tagged_issues():
    combined = agents.contrastive_combine({
        "usefulness": {"passed": True, "score": 0.8, "issues": ["vague"], "feedback": "be concrete"},
        "accuracy": {"passed": False, "score": 0.4, "issues": ["Claim about market size has no citation"],
                     "feedback": ""},
        "completeness": {"passed": True, "score": 0.9, "issues": [], "feedback": ""}})
    assert combined["score"] == 0.4 and combined["passed"] is False
    assert combined["issues"] == ["[accuracy] Claim about market size has no citation", "[usefulness] vague"]
