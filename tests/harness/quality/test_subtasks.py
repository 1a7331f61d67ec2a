"""Parallel subtasks: a layer of the selected plan's subtasks marked parallel runs as child fires (a
Celery group on the fires queue, here run in process as the worker would), the parent parked until
the chord's join hands it back; their answers feed the parent's main pass. The real worker's run is
in test_workers.py."""

import json

import pytest

from harness.fires.models import Fire
from harness.quality import subtask_fires, subtasks
from harness.quality.models import QualityRun
from harness.runtime.services import message_send
from tests.harness.quality.conftest import classification, harness_events, verdict
from tests.harness.support import session_tick

QUESTION = "Compare what the rover logs and the lake survey say about the northern shore"
TITLES = ("read the rover logs", "read the lake survey")


def subtask_plan(*subtasks, workflow="chat") -> str:
    return json.dumps({"plans": [{
        "description": "Compare the rover logs and the lake survey on the northern shore",
        "prompt_modifier": "Compare the two readings.", "estimated_turns": 2, "suggested_workflow": workflow,
        "subtasks": [{"title": title, "parallel": parallel} for title, parallel in subtasks]}]})


def run_layer(run: QualityRun) -> None:
    """What the fires worker does for the run's waiting chord: each child fire, then the join."""
    run.refresh_from_db()
    for step in subtasks.next_layer(run):
        subtask_fires.subtask_fire_run(run_id=run.pk, step=step)
    assert subtask_fires.subtasks_join(run_id=run.pk, token=run.waiting_token)


@pytest.mark.parametrize("plan, expected", [
    ({"subtasks": [{"parallel": True}, {"parallel": True}, {"parallel": False}, {"parallel": True}]}, [[1, 2]]),
    ({"subtasks": [{"parallel": False}, {"parallel": True}, {"parallel": True}, {"parallel": True}]}, [[2, 3, 4]]),
    ({"subtasks": [{"parallel": True}, {"parallel": True}, {}, {"parallel": True}, {"parallel": True}]},
     [[1, 2], [4, 5]]),
    ({"subtasks": [{"parallel": True}, {"parallel": False}]}, []),  # a lone parallel subtask stays in the main loop
    ({}, []),
])
def test_a_layer_is_two_or_more_consecutive_parallel_subtasks(plan, expected):
    assert subtasks.layers(plan) == expected


def test_a_complex_plan_with_two_parallel_subtasks_runs_them_as_child_fires(roles, session):
    # given a COMPLEX question whose plan has two parallel subtasks, then one of its own
    message_send(session=session, content=QUESTION)
    roles.classifier.reply(classification("COMPLEX", "chat"))
    roles.planner.reply(subtask_plan((TITLES[0], True), (TITLES[1], True), ("compare them", False)))
    for title in TITLES:  # each child fire answers its subtask, then skips its review
        roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": f"the answer to {title}: "
                                                                               + "a finding " * 6}}])
        roles.main.call_tool("skip", {"reason": "-"})
    roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "Both agree on the shore. " * 4}}])
    roles.verifier.reply(verdict(0.9))
    roles.main.call_tool("skip", {"reason": "-"})
    # when the session ticks, the parent plans and parks for its children before any main call
    assert session_tick(session_id=session.pk) == "parked"
    parent = Fire.objects.get(session=session)
    run = QualityRun.objects.get(fire=parent)
    assert run.waiting_for == "subtasks" and roles.calls() == {"classifier": 1, "planner": 1}
    # and when the fires worker has run the children and the join, the parent answers from their answers
    run_layer(run)
    children = Fire.objects.filter(parent=parent).order_by("spawned_by")
    assert [c.spawned_by for c in children] == [f"subtask:{run.pk}:1", f"subtask:{run.pk}:2"]
    assert all((c.status, c.depth, c.session_id, c.mode) == ("finished", 1, None, "introspective") for c in children)
    assert session_tick(session_id=session.pk) == "ended"  # its lone verifier called in the same run
    answers = [m.content for m in roles.main.sent[4].messages if "parallel subtasks" in (m.content or "")]
    assert len(answers) == 1 and answers[0].startswith("[harness] the plan's parallel subtasks")
    assert f"the answer to {TITLES[0]}" in answers[0] and f"the answer to {TITLES[1]}" in answers[0]
    parent.refresh_from_db()
    # the children's steps done on the board (the model never declared step 3)
    assert parent.status == "finished" and [s["status"] for s in parent.plan] == ["done", "done", "pending"]
    # then each child was announced and finished once, and the calls per role are exact: classifier 1,
    # planner 1, main 6 (each child's answer and review, the parent's answer and review), verifier 1
    events = harness_events(session)
    assert events.count("harness_subtask_start") == 2 and events.count("harness_subtask_done") == 2
    assert roles.calls() == {"classifier": 1, "planner": 1, "main": 6, "verifier": 1}


def test_a_redelivered_subtask_task_finds_its_child_and_runs_nothing_twice(roles, session):
    message_send(session=session, content=QUESTION)
    roles.classifier.reply(classification("COMPLEX", "chat"))
    roles.planner.reply(subtask_plan((TITLES[0], True), (TITLES[1], True)))
    for title in TITLES:
        roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": f"the answer to {title}"}}])
        roles.main.call_tool("skip", {"reason": "-"})
    assert session_tick(session_id=session.pk) == "parked"
    run = QualityRun.objects.get(fire__session=session)
    run_layer(run)
    # the broker delivers the group again (a worker died before acking): the same children, no call
    again = [subtask_fires.subtask_fire_run(run_id=run.pk, step=step) for step in (1, 2)]
    assert [a["status"] for a in again] == ["finished", "finished"]
    assert Fire.objects.filter(parent__session=session).count() == 2
    assert roles.calls() == {"classifier": 1, "planner": 1, "main": 4}
    # and a second join of the same chord does nothing
    assert not subtask_fires.subtasks_join(run_id=run.pk, token=run.waiting_token)
    assert harness_events(session).count("harness_subtask_start") == 2


def test_a_retry_of_the_parent_keeps_the_subtasks_answers_and_runs_no_child_again(roles, session):
    message_send(session=session, content=QUESTION)
    roles.classifier.reply(classification("COMPLEX", "chat"))
    roles.planner.reply(subtask_plan((TITLES[0], True), (TITLES[1], True)))
    for title in TITLES:
        roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": f"the answer to {title}"}}])
        roles.main.call_tool("skip", {"reason": "-"})
    roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "too short"}}])  # fails the contract
    roles.verifier.reply(verdict(0.9))
    roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "Both agree on the shore. " * 4}}])
    roles.verifier.reply(verdict(0.9))
    roles.main.call_tool("skip", {"reason": "-"})
    assert session_tick(session_id=session.pk) == "parked"
    run = QualityRun.objects.get(fire__session=session)
    run_layer(run)
    assert session_tick(session_id=session.pk) == "ended"  # the answer, its retry, each verified
    retry_prompt = [m.content or "" for m in roles.main.sent[5].messages]
    assert any(m.startswith("[harness] the plan's parallel subtasks") for m in retry_prompt)
    assert any(m.startswith(f"[harness] {QUESTION}") and "[SELF-CORRECTION: Attempt 2 of 2]" in m
               for m in retry_prompt)  # the healing prompt: a harness note, never learned as the user's words
    assert Fire.objects.filter(parent__session=session).count() == 2
    assert roles.calls() == {"classifier": 1, "planner": 1, "main": 7, "verifier": 2}
