"""Sessions and fires on real worker processes, through REST: one turn per session with two
workers, the snapshot cut, unaddressed messages firing again, asynchronous introspection, a fire
cancelled while it runs. The model is a local OpenAI-wire server that can hold a request open."""

import pytest
from django.db import transaction

from fathom.celery import app
from harness.fires.models import Fire
from harness.runtime.models import SessionEvent, Trigger, Turn
from harness.runtime.services import harness_settings_get, message_send
from lake.services import delta_create
from tests.conftest import wait_for
from tests.harness.support import wait_for_background_work

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def respond(body, **extra):
    return dict(tool_calls=[("respond", {"body": body, **extra})])


SKIP = dict(tool_calls=[("skip", {})])


def queued_ticks() -> int:
    with app.connection_for_write() as connection:
        return connection.default_channel.client.llen("fires")


def turn_events(session) -> list[str]:
    return list(SessionEvent.objects.filter(session=session, kind__in=["TurnStarted", "TurnEnded", "TurnFailure"])
                .order_by("seq").values_list("kind", flat=True))


def test_two_workers_run_one_turn_at_a_time_and_a_message_sent_mid_turn_waits(model, workers, api, session):
    # given two worker processes and a model that holds the first turn's call open
    workers()
    workers()
    model.answer(hold=True, **respond("first answer")).answer(**SKIP)
    model.answer(**respond("second answer")).answer(**SKIP)
    # when a message starts a turn on one worker
    first = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "first"}, format="json").json()
    assert model.stalled.wait(30)
    # and a second message arrives while it runs; its tick is taken by the other, idle worker
    second = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "second"}, format="json").json()
    wait_for(lambda: queued_ticks() == 0)
    # then that worker found the session busy: one turn runs, the newcomer stays queued
    assert list(Turn.objects.filter(session=session).values_list("number", "status")) == [(1, "running")]
    assert Trigger.objects.get(pk=second["trigger_id"]).state == Trigger.State.QUEUED
    model.release()
    # and once the turn ends, the next turn takes it up
    wait_for(lambda: turn_events(session) == ["TurnStarted", "TurnEnded", "TurnStarted", "TurnEnded"], timeout=60)
    turns = list(Turn.objects.filter(session=session).order_by("number"))
    assert [[str(t.pk) for t in turn.triggers.all()] for turn in turns] == [[first["trigger_id"]],
                                                                           [second["trigger_id"]]]
    assert turns[0].ended_at <= turns[1].created_at
    # the first turn's fire saw only the first message (the snapshot cut)
    assert [m["content"] for m in model.bodies[0]["messages"] if m["role"] == "user"] == ["first"]
    assert [m["content"] for m in model.bodies[2]["messages"] if m["role"] == "user"][-1] == "second"
    wait_for_background_work(session)


def test_turns_never_overlap_when_two_workers_race_on_many_messages(workers, api, session):
    # given two workers, the offline model, and a burst of messages (each send ticks the session)
    limits = harness_settings_get(workspace_id=session.workspace_id)
    limits.refire_delay_seconds, limits.refire_cap = 0, 1
    limits.save()
    workers()
    workers()
    sent = [api.post(f"/v1/sessions/{session.pk}/messages", {"content": f"message {n}"}, format="json")
            .json()["trigger_id"] for n in range(8)]

    # when the workers have answered everything
    def settled():
        rows = Trigger.objects.filter(pk__in=sent)
        return (not rows.filter(state=Trigger.State.QUEUED).exists()
                and not Turn.objects.filter(session=session, status="running").exists()
                and all(t.addressed or t.given_up_at for t in rows))

    wait_for(settled, timeout=90)
    # then turns strictly alternated (start, end, start, end, ...) and each message was in one snapshot
    events = turn_events(session)
    assert events == ["TurnStarted", "TurnEnded"] * (len(events) // 2)
    assert sorted(str(pk) for pk in Trigger.objects.filter(session=session, turn__isnull=False)
                  .values_list("pk", flat=True)) == sorted(sent)
    turns = list(Turn.objects.filter(session=session).order_by("number"))
    assert all(a.ended_at <= b.created_at for a, b in zip(turns, turns[1:], strict=False))
    wait_for_background_work(session, timeout=60)


def test_a_message_left_unaddressed_fires_the_session_again(model, workers, session):
    # given two messages in one turn; the model ticks off only the first
    limits = harness_settings_get(workspace_id=session.workspace_id)
    limits.refire_delay_seconds = 0
    limits.save()
    workers()
    with transaction.atomic():  # both queued before the tick: one snapshot
        one = message_send(session=session, content="what is the rover?")
        two = message_send(session=session, content="and the lake?")
    model.answer(tool_calls=[("mark_addressed", {"user_message_id": str(one.pk), "note": "rover done"}),
                             ("respond", {"body": "the rover is a robot"})]).answer(**SKIP)
    model.answer(**respond("the lake is the memory")).answer(**SKIP)
    # when the turn ends with the second one unaddressed
    wait_for(lambda: turn_events(session) == ["TurnStarted", "TurnEnded"] * 2, timeout=60)
    # then the next tick fired the session again for it alone, and it got answered
    first_end, second_end = SessionEvent.objects.filter(session=session, kind="TurnEnded").order_by("seq")
    assert first_end.data["unaddressed_ids"] == [str(two.pk)]
    second = Turn.objects.get(session=session, number=2)
    assert second.refired_ids == [str(two.pk)] and not second.triggers.exists()
    assert [m["content"] for m in model.bodies[2]["messages"] if m["role"] == "user"][-1] == "and the lake?"
    one.refresh_from_db()
    two.refresh_from_db()
    assert (one.addressed_note, two.addressed_note) == ("rover done", "answered by respond")
    assert second_end.data["unaddressed_ids"] == []
    wait_for_background_work(session)


def test_introspect_runs_asynchronously_and_the_fire_reads_back_whole(model, workers, api, workspace):
    rover = delta_create(workspace=workspace, content="The rover crossed the dune at dawn")
    workers()
    model.answer(tool_calls=[("semantic", {"query": "rover"}, "s1")])
    model.answer(**respond("it crossed the dune", cited_ids=[rover.pk])).answer(**SKIP)
    # when an introspection is asked to run asynchronously
    accepted = api.post("/v1/introspect", {"question": "what of the rover?", "async": True}, format="json")
    assert accepted.status_code == 202, accepted.content
    assert accepted.json()["status"] == "accepted"
    fire_id = accepted.json()["id"]
    # then a worker runs it, and the fire reads back with its journal, counts, cost and trace
    wait_for(lambda: api.get(f"/v1/fires/{fire_id}").json()["status"] == "finished", timeout=60)
    body = api.get(f"/v1/fires/{fire_id}").json()
    assert (body["mode"], body["stop_reason"], body["model_calls"]) == ("introspective", "responded", 3)
    assert (body["input_tokens"], body["output_tokens"]) == (300, 30)
    assert [t["phase"] for t in body["turns"]] == ["main", "main", "review"]
    assert body["turns"][0]["calls"][0]["name"] == "semantic" and rover.pk in body["turns"][0]["calls"][0]["result"]
    assert body["response"]["body"] == "it crossed the dune" and body["writes"]["card"]
    kinds = {event["kind"] for event in body["trace"]}
    assert {"trace.prompt.received", "llm.call.completed", "worker.tool.call"} <= kinds
    wait_for_background_work(fires=[Fire.objects.get(pk=fire_id)])


def test_a_running_fire_cancelled_over_rest_stops_before_its_next_model_call(model, workers, api):
    workers()
    model.answer(hold=True, tool_calls=[("plan", {"question": "q", "steps": ["a", "b"]})])
    model.answer(**respond("never asked"))
    fire_id = api.post("/v1/introspect", {"question": "q", "async": True}, format="json").json()["id"]
    assert model.stalled.wait(30)
    # when the fire is cancelled while its model call is in flight
    cancelled = api.post(f"/v1/fires/{fire_id}/cancel")
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "running"
    model.release()
    # then the turn in flight is kept, its tool runs, and no further model call is made
    wait_for(lambda: api.get(f"/v1/fires/{fire_id}").json()["status"] == "cancelled", timeout=60)
    body = api.get(f"/v1/fires/{fire_id}").json()
    assert (body["stop_reason"], body["model_calls"], len(model.bodies)) == ("cancelled", 1, 1)
    assert body["turns"][0]["calls"][0]["name"] == "plan"
    assert api.post(f"/v1/fires/{fire_id}/cancel").json()["status"] == "cancelled"  # idempotent
