"""The quality harness on real workers, as `fathom up` runs them: the fires worker (prefork) and the
quality worker (threads). The fire ends its task while its verifier group runs; the chord's callback
ticks it on. A quality worker killed with SIGKILL under the group: the fire still completes."""

import json
import os
import signal
import subprocess
import uuid

import pytest

from fathom import processes
from harness.fires.models import Fire
from harness.quality import configuration, verification
from harness.quality.models import QualityRetryPolicy, QualityRun
from harness.runtime.models import SessionEvent
from harness.runtime.services import message_send
from lake.services import delta_create
from tests.conftest import REPO_ROOT, stop_worker, wait_for, wait_for_worker, worker_env
from tests.harness.quality.conftest import classification, verdict
from tests.harness.support import wait_for_background_work

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ANSWER = "Paris is the capital of France, and has been for most of the last thousand years."


def respond(body=ANSWER, **extra):
    return {"name": "respond", "arguments": {"body": body, **extra}}


@pytest.fixture
def stack():
    """start(kind) -> a worker as `fathom up` starts it: "fires" (every queue but quality, prefork) or
    "quality" (threads); all stopped after the test."""
    started = []

    def start(kind: str):
        name = f"{kind}-{uuid.uuid4().hex[:6]}@%h"
        if kind == "quality":
            argv = processes.quality_worker_argv(name=name)
        else:
            argv = processes.worker_argv(queues=["fires", "memory", "maintenance"], concurrency=1, name=name)
        argv[argv.index("--loglevel") + 1] = "WARNING"
        process = subprocess.Popen(argv, cwd=REPO_ROOT, env=worker_env(), stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        started.append(process)
        wait_for_worker(name.split("@")[0])
        return process

    yield start
    for process in started:
        stop_worker(process)


def test_a_chat_question_over_rest_is_verified_on_the_quality_worker(stack, roles, api, session):
    # given the two workers, and scripted classifier, main model and verifier
    stack("fires")
    stack("quality")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.classifier.reply(classification())  # the judge of the answer's axes, in the background
    roles.main.reply(tool_calls=[respond()])
    roles.verifier.reply(verdict(0.85))
    roles.main.call_tool("skip", {"reason": "nothing to name"})
    # when a question arrives over REST
    api.post(f"/v1/sessions/{session.pk}/messages", {"content": "What is the capital of France?"}, format="json")
    # then the fire finishes, verified by the quality worker
    wait_for(lambda: Fire.objects.filter(session=session, status="finished").exists(), timeout=60)
    fire = Fire.objects.get(session=session)
    body = api.get(f"/v1/fires/{fire.pk}").json()
    quality = body["quality"]
    assert quality["state"] == "done" and quality["complexity"]["level"] == "SIMPLE"
    assert [a["verifier"]["score"] for a in quality["attempts"]] == [0.85]
    assert quality["attempts"][0]["contract"]["passed"] is True
    # one classifier call before the loop, the main turn and the review, one verifier call
    assert len(roles.main.sent) == 2 and len(roles.verifier.sent) == 1
    assert roles.classifier.sent[0].messages[0].content.startswith("You classify a question")
    kinds = list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True))
    assert kinds.index("harness_complexity") < kinds.index("harness_contract") < kinds.index("harness_verifier")
    assert kinds.index("harness_verifier") < kinds.index("AssistantOutput") < kinds.index("TurnEnded")
    wait_for_background_work(session)


def test_a_quality_worker_killed_under_the_verifier_group_does_not_lose_the_fire(stack, roles, session):
    # given a verifier slow enough to be killed in the middle of its call
    stack("fires")
    quality = stack("quality")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.classifier.reply(classification())  # the judge
    roles.main.reply(tool_calls=[respond()])
    roles.verifier.reply(verdict(0.8), latency=30)
    roles.verifier.reply(verdict(0.8))  # the call made again by the verifier task, redelivered
    roles.main.call_tool("skip", {"reason": "-"})
    message_send(session=session, content="What is the capital of France?")
    wait_for(lambda: len(roles.verifier.sent) == 1, timeout=60)
    # when the quality worker is killed with SIGKILL while the verifier group runs
    os.killpg(quality.pid, signal.SIGKILL)
    quality.wait()
    fire = Fire.objects.get(session=session)
    assert fire.status == "running" and QualityRun.objects.get(fire=fire).waiting_for == "verifier"
    # and another quality worker starts, and the sweep sends the unanswered group again
    stack("quality")
    assert verification.runs_waiting_resend(older_than_seconds=0)
    # then the fire completes, verified once the group ran again
    wait_for(lambda: Fire.objects.filter(pk=fire.pk, status="finished").exists(), timeout=60)
    run = QualityRun.objects.get(fire=fire)
    assert run.state == "done" and run.verifier_score == 0.8 and len(roles.verifier.sent) == 2
    wait_for_background_work(session)


def test_a_complex_synthesis_runs_its_swarm_and_contrastive_verifiers_on_the_quality_worker(stack, roles, api,
                                                                                           session, workspace,
                                                                                           quality_on):
    # given the swarm on, five notes, one attempt allowed (so the calls are fixed), and the two workers
    quality_on.swarm_enabled = True
    quality_on.save()
    for n in range(5):
        delta_create(workspace=workspace, content=f"Zephyrine expedition note {n}: the team saw theme {n}.")
    configuration.retry_policy_get(workspace_id=workspace.pk)
    QualityRetryPolicy.objects.filter(workspace=workspace, workflow_type="synthesis").update(max_attempts=1)
    stack("fires")
    stack("quality")
    roles.classifier.reply(classification("COMPLEX", "synthesis"))
    roles.classifier.reply(classification())  # the judge of the answer's axes, in the background
    roles.planner.reply(json.dumps({"plans": [{
        "description": "Compare the zephyrine themes", "prompt_modifier": "Cite the notes.", "estimated_turns": 2,
        "suggested_workflow": "synthesis", "subtasks": [{"title": "compare", "parallel": False}]}]}))
    for _ in range(5):
        roles.specialist.reply("an angle: themes recur")
    roles.aggregator.reply("MERGED: the themes recur across the notes")
    roles.main.reply(tool_calls=[respond("## Themes\n- They recur across the notes.")])
    for score in (0.9, 0.6, 0.8):
        roles.verifier.reply(verdict(score))
    # when the question arrives over REST
    api.post(f"/v1/sessions/{session.pk}/messages", {"content": "Compare the themes across all the zephyrine notes"},
             format="json")
    # then the fire finishes after its swarm and its three verifiers ran on the quality worker
    wait_for(lambda: Fire.objects.filter(session=session, status="finished").exists(), timeout=90)
    run = QualityRun.objects.get(fire__session=session)
    assert run.swarm["specialists_succeeded"] == 5 and run.swarm["aggregator_succeeded"]
    assert run.attempts.get(number=1).verifier["score"] == 0.6
    assert any("MERGED" in m.content for m in roles.main.sent[0].messages if m.role == "user")
    # model calls per role of a swarm run with contrastive verification (its answer degraded: no review pass)
    assert run.fire.verdict == "degraded"
    assert {role: n for role, n in roles.calls().items() if role != "classifier"} == {
        "planner": 1, "specialist": 5, "aggregator": 1, "main": 1, "verifier": 3}
    assert roles.classifier.sent[0].messages[0].content.startswith("You classify a question")
    kinds = list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True))
    assert kinds.count("tool_sandbox") == 5
    for name in ("harness_plan_selected", "harness_swarm_activated", "harness_swarm_complete", "harness_verifier",
                 "harness_rqs", "harness_degraded"):
        assert name in kinds
    wait_for_background_work(session)


def test_a_plans_parallel_subtasks_run_as_child_fires_on_the_fires_worker(stack, roles, session):
    # given the two workers, and a COMPLEX question whose plan has two parallel subtasks
    stack("fires")
    stack("quality")
    roles.classifier.reply(classification("COMPLEX", "chat"))
    for _ in range(3):
        roles.classifier.reply(classification())  # the judges of the three fires' axes, in the background
    roles.planner.reply(json.dumps({"plans": [{
        "description": "Read both sources, then compare", "prompt_modifier": "", "estimated_turns": 2,
        "suggested_workflow": "chat", "subtasks": [{"title": "read the rover logs", "parallel": True},
                                                   {"title": "read the lake survey", "parallel": True}]}]}))
    for _ in range(2):  # each child answers, then skips its review (one child after the other: concurrency 1)
        roles.main.reply(tool_calls=[respond("a subtask's answer: the shore is rocky, the survey agrees")])
        roles.main.call_tool("skip", {"reason": "-"})
    roles.main.reply(tool_calls=[respond()])
    roles.verifier.reply(verdict(0.9))
    roles.main.call_tool("skip", {"reason": "-"})
    # when the question arrives
    message_send(session=session, content="Compare what the rover logs and the lake survey say")
    # then the children run on the fires worker, the join hands the parent back, and it finishes verified
    wait_for(lambda: Fire.objects.filter(session=session, status="finished").exists(), timeout=90)
    parent = Fire.objects.get(session=session)
    children = list(Fire.objects.filter(parent=parent))
    assert sorted(c.spawned_by.rsplit(":", 1)[1] for c in children) == ["1", "2"]
    assert all(c.status == "finished" and c.depth == 1 for c in children)
    run = QualityRun.objects.get(fire=parent)
    assert sorted(run.plan["subtask_answers"]) == ["1", "2"] and run.state == "done"
    kinds = list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True))
    assert kinds.count("harness_subtask_start") == 2 and kinds.count("harness_subtask_done") == 2
    assert kinds.index("harness_subtask_done") < kinds.index("harness_contract")
    # model calls: planner 1, main 6 (two children's answer and review, the parent's), verifier 1
    assert {role: n for role, n in roles.calls().items() if role != "classifier"} == {
        "planner": 1, "main": 6, "verifier": 1}
    wait_for_background_work(fires=[parent, *children])
