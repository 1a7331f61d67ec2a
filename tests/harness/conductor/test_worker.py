"""Runs on a real Celery worker (the offline model, no key): POST /v1/runs over the lake, its events
on SSE as they happen, its graph with the model calls per actor; and a worker killed with `kill -9`
in the middle of a run, after which the run completes with nothing dispatched or asked twice."""

import json
import os
import signal
import time

import httpx
import pytest

from fathom.celery import app
from fathom.llm.scripted import Script
from fathom.services import apikey_create
from fathom.tracing.models import TraceEvent
from harness.conductor.models import CapabilityCall, Decision, Run
from harness.conductor.services import conductor_settings_get
from lake.services import delta_create
from tests.conftest import wait_for
from tests.harness.support import read_sse

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_run_over_the_lake_streams_its_events_and_shows_its_graph(celery_worker, live_server_url, workspace):
    delta_create(workspace=workspace, content="Tech news: a new chip doubles phone battery life", source="feed")
    headers = {"Authorization": f"Bearer {apikey_create(workspace=workspace, role='operator').secret}"}
    with httpx.Client(base_url=live_server_url, headers=headers, timeout=60) as client:
        started = client.post("/v1/runs", json={"objective": "tech news about the chip battery"})
        assert started.status_code == 202, started.text
        run_id = started.json()["id"]
        with client.stream("GET", f"/v1/runs/{run_id}/events?timeout=60",
                           headers={"Accept": "text/event-stream"}) as stream:
            events = read_sse(stream, until="RunFinished")
        with client.stream("GET", f"/v1/runs/{run_id}/events?timeout=5",
                           headers={"Accept": "text/event-stream", "Last-Event-ID": "4"}) as stream:
            resumed = read_sse(stream, until="RunFinished")
        graph = client.get(f"/v1/runs/{run_id}/graph").json()

    kinds = [event["event"] for event in events]
    assert kinds == ["RunAccepted", "AgendaSet", "CapabilityCallDispatched", "CapabilityCallFinished",
                     "DecisionMade", "RunFinished"]
    assert [int(event["id"]) for event in events] == list(range(1, 7))
    assert json.loads(events[-1]["data"])["data"]["status"] == "completed"
    assert [event["event"] for event in resumed] == kinds[4:]  # a reconnect resumes after its last id
    run = Run.objects.get(pk=run_id)
    assert "battery" in run.answer  # the researcher found the delta in the lake
    conductor = graph["tree"]["children"][0]
    assert conductor["model_calls"] == 2 and graph["totals"]["bootstrap_calls"] == 1
    worker = conductor["children"][0]
    assert worker["worker"] == "researcher" and worker["model_calls"] >= 2
    assert [tool["name"] for tool in worker["children"]][0] == "semantic"
    actors = {actor["actor_id"]: actor["model_calls"] for actor in graph["actors"]}
    assert actors[f"conductor:{run_id}"] == 2 and actors[f"fire:{worker['fire_id']}"] == worker["model_calls"]
    assert all(tool["task_id"] for tool in worker["children"])  # written inside the capability call's task
    # every model call of the run is in its graph, the judge's on the quality worker too (docs/conductor.md)
    with httpx.Client(base_url=live_server_url, headers=headers, timeout=60) as client:
        wait_for(lambda: "judge" in client.get(f"/v1/runs/{run_id}/graph").json()["totals"]["model_calls_by_role"],
                 timeout=60)
        totals = client.get(f"/v1/runs/{run_id}/graph").json()["totals"]
    roles = {role: n for role, n in totals["model_calls_by_role"].items() if role != "writer"}
    assert roles == {"conductor": 2, "main": 2, "review": 1, "judge": 1} and totals["model_calls"] == 6, totals
    assert totals["model_calls"] == sum(totals["model_calls_by_role"].values())


def test_no_watcher_runs_on_a_started_worker(celery_worker):
    registered = [name for names in (app.control.inspect(timeout=5).registered() or {}).values() for name in names]
    assert "fires.conductor_step" in registered and "quality.conductor_call" in registered
    assert not [name for name in registered if "watch" in name.lower()]


def test_kill_9_mid_run_completes_without_a_call_dispatched_or_asked_twice(celery_worker, workspace, api,
                                                                           bwrap_installed):
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.terminal_enabled = True
    limits.save()
    run_id = api.post("/v1/runs", {"objective": "in the local shell, run `sleep 3; echo slept`"},
                      format="json").json()["id"]

    # when the worker process carrying the capability call dies while its command runs
    call = wait_for(lambda: CapabilityCall.objects.filter(run_id=run_id, status="running").exclude(
        runner="").exclude(journal=[]).first(), timeout=60)
    pid = int(call.runner.split(":")[1])
    time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)

    # then the redelivered call resumes from its journal and the run completes
    run = wait_for(lambda: Run.objects.filter(pk=run_id, status__in=Run.TERMINAL).first(), timeout=90)
    assert run.status == Run.Status.COMPLETED and "slept" in run.answer
    call = CapabilityCall.objects.get(run_id=run_id)
    assert CapabilityCall.objects.filter(run_id=run_id).count() == 1 and call.attempts == 2
    assert call.task_id  # the Celery task that carried it (the redelivered one: the same message)
    assert call.model_calls == 2  # shell, then finish: the answer recorded before the kill was not asked again
    assert [entry["type"] for entry in call.journal] == ["model", "tool", "model"]
    assert Decision.objects.filter(run_id=run_id, kind="bootstrap").count() == 1
    conductor_calls = TraceEvent.objects.filter(trace_id=run.trace_id, kind="llm.call.started",
                                                actor_id=f"conductor:{run_id}").count()
    assert conductor_calls == 2  # bootstrap and one decision



def test_a_simple_research_prompt_on_a_real_worker_with_a_scripted_model(celery_worker, workspace, api):
    conductor, research = Script.install(workspace, roles=("conductor",)), Script.install(workspace, roles=("main",))
    try:
        conductor.call_tool("set_agenda", {"items": [{"capability": "researcher", "task": "today's tech news"}]})
        conductor.call_tool("complete", {"answer": "Chips got faster."})
        research.call_tool("web_search", {"query": "tech news today"})
        research.call_tool("respond", {"body": "Chips got faster."})
        research.call_tool("skip", {})
        run_id = api.post("/v1/runs", {"objective": "whats tech news today"}, format="json").json()["id"]
        run = wait_for(lambda: Run.objects.filter(pk=run_id, status__in=Run.TERMINAL).first(), timeout=90)
        graph = api.get(f"/v1/runs/{run_id}/graph").json()
        conductor_calls = len(conductor.sent)
    finally:
        conductor.reset()
        research.reset()
    assert run.status == Run.Status.COMPLETED and run.answer == "Chips got faster."
    assert graph["totals"]["bootstrap_calls"] == 1 and graph["totals"]["decision_calls"] <= 2
    assert graph["totals"]["worker_calls"] == {"researcher": 1}  # terminal: 0
    assert conductor_calls == graph["totals"]["conductor_model_calls"] == 2
