"""Fires survive their worker: `kill -9` of the process running a fire, in the middle of it, and
the redelivered task (or, with the whole worker gone, the beat sweep on another worker) resumes
from the last committed turn and completes with every write made exactly once.

The model is a local server speaking the OpenAI wire protocol (the real SDK, in the real worker
process); it holds one request open, so the kill lands while the fire is known to be mid-call."""

import os
import signal
import uuid
from collections import Counter

import pytest

from fathom.celery import app
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.runtime import claims
from harness.runtime import services as runtime_services
from harness.runtime.models import Session, SessionEvent, Trigger
from harness.runtime.services import harness_settings_get, message_send
from lake.models import Delta
from lake.services import delta_create
from tests.conftest import wait_for
from tests.harness.conftest import ALL_QUEUES
from tests.harness.support import fire_write_kinds, wait_for_background_work

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def pid_alive(pid: int) -> bool:
    host = claims.runner_id().split(":")[0]
    return not claims._is_dead_here(f"{host}:{pid}:0")


@pytest.mark.parametrize("stall_in, kill", [
    ("parent", "the pool process"),   # mid-call of the fire's second turn
    ("child", "the pool process"),    # mid-call of an introspect child fire, inside the parent's tool call
    ("parent", "the whole worker"),   # every process of the worker; another worker takes over
])
def test_kill_9_mid_fire_resumes_from_the_journal_and_writes_everything_once(
        stall_in, kill, model, workers, workspace, session, api, monkeypatch):
    # given a lake, a message, and a model whose answers run a tool turn with side effects
    # (mark_addressed, an introspect child fire that writes its own card), then respond
    rover = delta_create(workspace=workspace, content="The rover crossed the dune at dawn", source="log")
    storm = delta_create(workspace=workspace, content="The rover is a boat", source="log")
    limits = harness_settings_get(workspace_id=workspace.pk)
    limits.refire_delay_seconds = 0
    limits.save()
    queue = f"fires-dur-{uuid.uuid4().hex[:6]}"
    monkeypatch.setattr(runtime_services, "session_tick_enqueue", lambda **kwargs: None)  # we tick on `queue`
    message = message_send(session=session, content="where did the rover go?")
    answers = [
        ("parent t1", dict(tool_calls=[("semantic", {"query": "rover dune"}, "s1"),
                                       ("mark_addressed", {"user_message_id": str(message.pk), "note": "looked"}, "m1"),
                                       ("introspect", {"question": "what do I know of dunes?"}, "i1")])),
        ("child t1", dict(tool_calls=[("semantic", {"query": "dune"}, "cs1")])),
        ("child t2", dict(tool_calls=[("respond", {"body": "a dune was crossed", "cited_ids": [rover.pk]}, "cr")])),
        ("child review", dict(tool_calls=[("skip", {"reason": "nothing to name"}, "ck")])),
        ("parent t2", dict(tool_calls=[("respond", {
            "body": "It crossed the dune at dawn.", "attestation": "I keep the rover's days apart.",
            "mood_shift": {"direction": "+", "axis": "curiosity", "magnitude": 0.1, "reason": "dunes"},
            "cited_ids": [rover.pk], "dropped_ids": [storm.pk]}, "r")])),
        ("parent review", dict(tool_calls=[("skip", {}, "k")])),
    ]
    stall_before = "child t2" if stall_in == "child" else "parent t2"
    for name, answer in answers:
        if name == stall_before:
            model.stall()
        model.answer(**answer)
    first = workers([queue, *ALL_QUEUES])

    # when the session's tick runs on that worker and the fire reaches the held model call
    app.send_task("fires.session_tick", args=[str(session.pk)], queue=queue)
    assert model.stalled.wait(60), "the fire never reached the held model call"
    runner = Session.objects.get(pk=session.pk).runner
    pid = int(runner.split(":")[1])
    assert os.getpgid(pid) == first.pid and pid != first.pid  # a pool process of our worker runs it
    parent = Fire.objects.get(session=session)
    journal_before = FireToolCall.objects.filter(fire__in=[parent, *parent.children.all()]).count()
    in_flight = [s for s in _walk(api.get(f"/v1/traces/{parent.trace_id}").json()["spans"]) if s["status"] == "running"]
    assert "llm.call" in [s["name"] for s in in_flight]  # the held call shows in the trace while it runs
    # ... and it is killed with SIGKILL
    if kill == "the pool process":
        os.kill(pid, signal.SIGKILL)  # the worker's main process sees it lost and requeues the task
    else:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        workers(ALL_QUEUES)
    wait_for(lambda: not pid_alive(pid), timeout=10)
    if kill == "the whole worker":
        app.send_task("maintenance.harness_sweep")  # what beat sends every 30 s
    model.release()

    # then the fire resumes and finishes
    wait_for(lambda: Fire.objects.get(pk=parent.pk).status in Fire.TERMINAL, timeout=90)
    parent.refresh_from_db()
    child = Fire.objects.get(parent=parent)
    assert (parent.status, parent.stop_reason, child.status) == ("finished", "responded", "finished"), parent.error
    assert journal_before >= 2  # turn 1's first tools had been committed before the kill

    # the model was asked once per committed turn, plus the one call the kill cut off, asked again
    # with the same prompt: nothing before it was asked again
    assert len(model.bodies) == len(answers) + 1
    held = next(i for i, r in enumerate(model.bodies) if i and r["messages"] == model.bodies[i - 1]["messages"])
    assert [m["role"] for m in model.bodies[held]["messages"]][-1] == "tool"
    for fire in (parent, child):
        assert list(FireTurn.objects.filter(fire=fire).values_list("number", "phase")) == [
            (1, "main"), (2, "main"), (3, "review")]
        assert fire.model_calls == 3
    calls = Counter(FireToolCall.objects.filter(fire=parent).values_list("call_id", flat=True))
    assert calls == {"s1": 1, "m1": 1, "i1": 1, "r": 1, "k": 1}
    assert Counter(FireToolCall.objects.filter(fire=child).values_list("call_id", flat=True)) == {
        "cs1": 1, "cr": 1, "ck": 1}
    assert Fire.objects.filter(parent=parent).count() == 1

    # and every write happened exactly once
    wait_for_background_work(fires=[parent, child], timeout=60)
    assert fire_write_kinds(parent) == {
        "kind:card": 1, "kind:standpoint-attestation": 1, "kind:mood-shift": 1, "affirms": 1, "refutes": 1,
        "kind:provenance+kind:qa-marker": 1, "kind:judge-axes": 1}
    assert fire_write_kinds(child) == {
        "kind:card": 1, "affirms": 1, "kind:provenance+kind:qa-marker": 1, "kind:judge-axes": 1}
    marker = Delta.objects.get(tags__contains=["kind:qa-marker", f"fire:{parent.pk}"])
    assert "provenance-level:0" in marker.tags and f"from:{rover.pk}" in marker.tags
    wait_for(lambda: Delta.objects.get(pk=marker.pk).provenance_embedding is not None)  # its centroid
    # the session's turn ends after its fire (and its trace) did
    wait_for(lambda: SessionEvent.objects.filter(session=session, kind="TurnEnded").exists(), timeout=30)
    events = Counter(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert (events["TurnStarted"], events["AssistantOutput"], events["TurnEnded"]) == (1, 1, 1)
    message.refresh_from_db()
    assert message.addressed and message.addressed_note == "looked" and message.turn.number == 1
    assert Trigger.objects.filter(session=session).count() == 1
    session.refresh_from_db()
    assert session.turn_count == 1 and not session.runner

    # and the fire's one trace shows its runs: the first one's model calls, then a fire.resume span
    # (attempt 2) over the resumed run's; no second trace was opened for it
    trace_id = api.get(f"/v1/fires/{parent.pk}").json()["trace_id"]
    trace = wait_for(lambda: _finished_trace(api, trace_id, parent), timeout=30)
    assert [(s["name"], s["run_id"]) for s in trace["spans"]] == [("trace.prompt", str(parent.pk))]
    spans = list(_walk(trace["spans"]))
    for fire, resumed in ((parent, True), (child, stall_in == "child")):
        runs = [s for s in spans if s["name"] == "trace.prompt" and s["run_id"] == str(fire.pk)]
        calls = [sum(c["name"] == "llm.call" and c["status"] == "ok" for c in run["children"]) for run in runs]
        assert len(calls) == (2 if resumed else 1) and all(calls) and sum(calls) == fire.model_calls
        assert [s["attributes"]["attempt"] for s in spans
                if s["name"] == "fire.resume" and s["run_id"] == str(fire.pk)] == ([2] if resumed else [])
    assert [t["trace_id"] for t in api.get("/v1/traces", {"run_id": str(parent.pk)}).json()["results"]] == [trace_id]
    # what the killed run left open is ended: its call in flight failed ("worker lost"), its root with the fire
    stalled = parent if stall_in == "parent" else child
    lost = [s for s in spans if s["error"].startswith("worker lost: attempt 1")]
    assert ("llm.call", str(stalled.pk)) in {(s["name"], s["run_id"]) for s in lost}
    assert {s["run_id"] for s in lost} <= {str(parent.pk), str(child.pk)}
    assert trace["status"] == "ok" and not [s["name"] for s in spans if s["status"] == "running"]


def _finished_trace(api, trace_id, fire):
    """The trace once every span in it has ended (the fire's root last)."""
    trace = api.get(f"/v1/traces/{trace_id}").json()
    return trace if trace.get("status") not in (None, "running") else None


def _walk(spans):
    for node in spans:
        yield node
        yield from _walk(node["children"])
