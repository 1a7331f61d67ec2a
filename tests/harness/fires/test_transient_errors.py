"""A transient error is retried, never fatal: the database connections of the worker running a fire
are cut (pg_terminate_backend, as a restarted PostgreSQL or a proxy would) while it waits on a model
call; the task retries, and the fire resumes from its journal and finishes, asking the model nothing
twice but the call whose answer was lost with the connection, and making every write once.

The worker's connections are found by their application name (PGAPPNAME, set for that worker only),
so no other process of the test run loses its connection."""

import uuid
from collections import Counter

import pytest
from django.db import InterfaceError, OperationalError, connection

from fathom.celery import app
from fathom.llm.models import ModelAssignment
from fathom.llm.scripted import Script
from fathom.llm.services import model_assign
from fathom.transient import connections_reset
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.fires.services import fire_create, fire_run
from harness.fires.tools.base import REGISTRY, Tool, register
from harness.runtime import services as runtime_services
from harness.runtime.models import SessionEvent
from harness.runtime.services import harness_settings_get, message_send
from lake.models import Delta
from lake.services import delta_create
from tests.conftest import wait_for
from tests.harness.conftest import ALL_QUEUES
from tests.harness.support import fire_write_kinds, wait_for_background_work

pytestmark = pytest.mark.django_db(transaction=True)


def terminate_backends(application_name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE application_name = %s AND pid <> pg_backend_pid()", [application_name])
        return cursor.fetchone()[0]


@pytest.fixture
def cut_worker(workers):
    """A worker on its own queue (and every queue) whose database connections `cut()` terminates."""
    name = f"fathom-test-{uuid.uuid4().hex[:8]}"
    queue = f"fires-cut-{uuid.uuid4().hex[:6]}"
    workers([queue, *ALL_QUEUES], env={"PGAPPNAME": name})

    class Worker:
        def cut(self) -> int:
            return terminate_backends(name)

    worker = Worker()
    worker.queue = queue
    return worker


@pytest.mark.worker
@pytest.mark.parametrize("held", ["main", "review"])
def test_a_dropped_database_connection_mid_fire_is_retried_and_the_fire_resumes_from_its_journal(
        held, model, cut_worker, workspace, session, api, monkeypatch):
    # given a lake, a message, and a model whose answers run a tool turn with a side effect, respond
    # (with every per-fire write), then skip the review
    rover = delta_create(workspace=workspace, content="The rover crossed the dune at dawn", source="log")
    storm = delta_create(workspace=workspace, content="The rover is a boat", source="log")
    limits = harness_settings_get(workspace_id=workspace.pk)
    limits.refire_delay_seconds = 0
    limits.save()
    monkeypatch.setattr(runtime_services, "session_tick_enqueue", lambda **kwargs: None)  # we tick on our queue
    message = message_send(session=session, content="where did the rover go?")
    answers = [
        ("t1", dict(tool_calls=[("semantic", {"query": "rover dune"}, "s1"),
                                ("mark_addressed", {"user_message_id": str(message.pk), "note": "looked"}, "m1")])),
        ("t2", dict(tool_calls=[("respond", {
            "body": "It crossed the dune at dawn.", "attestation": "I keep the rover's days apart.",
            "mood_shift": {"direction": "+", "axis": "curiosity", "magnitude": 0.1, "reason": "dunes"},
            "cited_ids": [rover.pk], "dropped_ids": [storm.pk]}, "r")])),
        ("review", dict(tool_calls=[("skip", {}, "k")])),
    ]
    held_answer = "t2" if held == "main" else "review"
    for name, answer in answers:
        if name == held_answer:
            model.answer(**answer, hold=True)  # answered once released, but the worker's connection is gone by then
        model.answer(**answer)  # what the resumed fire is answered when it asks again

    # when the session's tick reaches the held model call, and the worker's connections are cut
    app.send_task("fires.session_tick", args=[str(session.pk)], queue=cut_worker.queue)
    assert model.stalled.wait(60), "the fire never reached the held model call"
    fire = Fire.objects.get(session=session)
    journal_before = FireToolCall.objects.filter(fire=fire).count()
    assert cut_worker.cut() >= 1
    model.release()

    # then the fire finishes, on the task's retry, without failing in between
    wait_for(lambda: Fire.objects.get(pk=fire.pk).status in Fire.TERMINAL, timeout=90)
    fire.refresh_from_db()
    assert (fire.status, fire.stop_reason, fire.error) == ("finished", "responded", "")
    assert fire.review["outcome"] == "skip"
    assert journal_before == (2 if held == "main" else 3)

    # the model was asked once per committed turn, plus the held call, asked again with the same
    # prompt (its answer was lost with the connection): no answered turn was asked again
    assert len(model.bodies) == len(answers) + 1
    held_at = next(i for i, r in enumerate(model.bodies) if i and r["messages"] == model.bodies[i - 1]["messages"])
    assert held_at == (2 if held == "main" else 3)
    assert list(FireTurn.objects.filter(fire=fire).values_list("number", "phase")) == [
        (1, "main"), (2, "main"), (3, "review")]
    assert fire.model_calls == 3
    assert Counter(FireToolCall.objects.filter(fire=fire).values_list("call_id", flat=True)) == {
        "s1": 1, "m1": 1, "r": 1, "k": 1}

    # every per-fire write happened once, and the session's turn ended once, not as a failure
    wait_for_background_work(fires=[fire], timeout=60)
    assert fire_write_kinds(fire) == {
        "kind:card": 1, "kind:standpoint-attestation": 1, "kind:mood-shift": 1, "affirms": 1, "refutes": 1,
        "kind:provenance+kind:qa-marker": 1, "kind:judge-axes": 1}
    wait_for(lambda: SessionEvent.objects.filter(session=session, kind="TurnEnded").exists(), timeout=30)
    events = Counter(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert (events["TurnStarted"], events["AssistantOutput"], events["TurnEnded"], events["TurnFailure"]) == (
        1, 1, 1, 0)
    message.refresh_from_db()
    assert message.addressed and message.addressed_note == "looked"
    session.refresh_from_db()
    assert session.turn_count == 1 and not session.runner

    # and the fire's one trace ends ok: the first attempt's root stayed open (as after a killed
    # worker) and was ended by the resumed run, under a fire.resume span of attempt 2
    trace = wait_for(lambda: _finished(api.get(f"/v1/traces/{fire.trace_id}").json()), timeout=30)
    assert trace["status"] == "ok" and [s["name"] for s in trace["spans"]] == ["trace.prompt"]
    assert [s["attributes"]["attempt"] for s in _walk(trace["spans"]) if s["name"] == "fire.resume"] == [2]


@pytest.mark.worker
def test_judge_axes_is_retried_after_a_dropped_database_connection(model, cut_worker, workspace):
    # given a fire that answered, and a classifier (the judge) whose first answer is held
    model_assign(workspace=workspace, role="classifier",
                 model=ModelAssignment.objects.get(workspace=workspace, role="main").model)
    fire = fire_create(workspace=workspace, mode="introspective", question="how far did the rover go?")
    Fire.objects.filter(pk=fire.pk).update(status="finished", phase="done", response={"body": "far"})
    scores = '{"salience": 0.5, "novelty": 0.25, "resonance": 0.5, "confidence": 0.75, "comfort": 0.5}'
    model.answer(scores, hold=True)
    model.answer(scores)

    # when the judge task's connection is cut while it waits for the model
    app.send_task("quality.fire_judge_axes", args=[str(fire.pk)], queue=cut_worker.queue)
    assert model.stalled.wait(60), "the judge never called the model"
    assert cut_worker.cut() >= 1
    model.release()

    # then the retried task writes the judgement, once
    judged = wait_for(lambda: list(Delta.objects.filter(tags__contains=["kind:judge-axes", f"fire:{fire.pk}"])),
                      timeout=60)
    assert len(judged) == 1 and "confidence:0.75" in judged[0].tags
    assert len(model.bodies) == 2 and model.bodies[0]["messages"] == model.bodies[1]["messages"]


@pytest.fixture
def connection_killer():
    """A tool whose first run kills its own database connection mid-query (a tool that reads, so
    outside any transaction: the connection is left broken, not rolled back and dropped)."""
    runs = []

    def run(ctx, args):
        runs.append(1)
        if len(runs) == 1:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return "read it"

    register(Tool(name="read_flaky", description="reads", run=run, parameters={"type": "object", "properties": {}}))
    yield runs
    REGISTRY.pop("read_flaky", None)


@pytest.fixture
def scripted_main(workspace):
    """The scripted model for the fire's own role only: the judge a worker may run meanwhile is offline."""
    script = Script.install(workspace, roles=("main",))
    yield script
    script.reset()


def test_a_tool_that_loses_the_connection_stops_the_fire_for_a_retry_not_a_failure(
        scripted_main, workspace, connection_killer):
    # given a fire whose first tool call loses the database connection
    scripted_llm = scripted_main
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    scripted_llm.reply(tool_calls=[{"id": "p", "name": "plan", "arguments": {"question": "q", "steps": ["s"]}},
                                   {"id": "f", "name": "read_flaky", "arguments": {}}])
    scripted_llm.reply(tool_calls=[{"id": "r", "name": "respond", "arguments": {"body": "done"}}]).call_tool("skip")
    # when it runs, the error comes out (for the task to retry) and the fire is left to resume
    with pytest.raises(OperationalError):
        fire_run(fire_id=fire.pk)
    fire.refresh_from_db()
    assert (fire.status, fire.phase, fire.error, fire.runner) == ("running", "main", "", "")  # claim released
    assert list(FireToolCall.objects.filter(fire=fire).values_list("call_id", flat=True)) == ["p"]
    # and run again (the retried task), it resumes from the journal: the tool runs again, the model
    # is not asked again for the turn it answered
    fire = fire_run(fire_id=fire.pk)
    assert (fire.status, fire.stop_reason, fire.model_calls) == ("finished", "responded", 3)
    assert len(scripted_llm.sent) == 3 and len(connection_killer) == 2
    assert FireToolCall.objects.get(fire=fire, call_id="f").result == "read it"


def test_connections_reset_replaces_a_broken_connection_outside_a_transaction():
    with pytest.raises(OperationalError), connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    with pytest.raises((OperationalError, InterfaceError)), connection.cursor() as cursor:
        cursor.execute("SELECT 1")  # Django does not replace it on its own mid-task
    connections_reset()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def _finished(trace: dict) -> dict | None:
    return trace if trace.get("status") not in (None, "running") else None


def _walk(spans):
    for node in spans:
        yield node
        yield from _walk(node["children"])
