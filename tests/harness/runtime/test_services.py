"""The runtime's services: profiles copied into sessions, the snapshot cut, one turn per session,
unaddressed messages firing again, failures reported, turns resumed after their runner died."""

import os
import subprocess
import threading

import pytest
from django.db import connection

from harness.runtime import claims, services
from harness.runtime.models import HarnessSettings, Session, SessionEvent, Trigger, Turn
from harness.runtime.profiles import agent_profile_create, profile_update, user_profile_create
from harness.runtime.services import (
    harness_settings_get,
    message_mark_addressed,
    message_send,
    session_create,
    session_tick,
    sessions_sweep,
    trigger_enqueue,
)


def kinds(session) -> list[str]:
    return list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True))


def address_all(snapshot):
    for message in snapshot.messages:
        message_mark_addressed(session_id=snapshot.session.pk, trigger_id=message.pk, note="done")


def test_a_session_keeps_its_profile_copies_until_a_refresh_profile_trigger(workspace):
    # given a session opened with an agent and a user profile
    agent = agent_profile_create(workspace=workspace, slug="ada", soul_md="curious")
    user = user_profile_create(workspace=workspace, slug="myra", user_md="likes rivers")
    session = session_create(workspace=workspace, agent="ada", user="myra")
    # when the profiles change
    profile_update(profile=agent, soul_md="patient")
    profile_update(profile=user, user_md="likes lakes")
    session.refresh_from_db()
    # then the session still sees what it started with
    assert session.agent_profile_copy["soul_md"] == "curious"
    assert session.user_profile_copy["user_md"] == "likes rivers"

    # when a RefreshProfile trigger is taken up by a turn
    trigger_enqueue(session=session, kind=Trigger.Kind.REFRESH_PROFILE)
    ran = []
    assert session_tick(session_id=session.pk, work=ran.append) == "ended"
    session.refresh_from_db()
    # then the copies are the new versions, the event says so, and no work ran for it alone
    assert session.agent_profile_copy["soul_md"] == "patient"
    assert session.agent_profile_copy["version"] == 2
    assert session.user_profile_copy["user_md"] == "likes lakes"
    assert ran == []
    assert kinds(session) == ["TriggerAccepted", "TurnStarted", "ProfileRefreshed", "TurnEnded"]


def test_a_message_sent_during_a_turn_waits_for_the_next_turn(session):
    # given a queued message
    first = message_send(session=session, content="first")
    seen = []

    def work(snapshot):
        seen.append([t.content for t in snapshot.messages])
        if len(seen) == 1:  # a second message arrives while the first turn runs
            message_send(session=session, content="second")
        address_all(snapshot)

    # when the session ticks
    session_tick(session_id=session.pk, work=work)
    # then the turn saw only what was queued when it started; the newcomer is still queued
    assert seen == [["first"]]
    second = Trigger.objects.get(session=session, content="second")
    assert second.state == Trigger.State.QUEUED
    first.refresh_from_db()
    assert first.state == Trigger.State.CONSUMED and first.addressed

    # and the next tick takes it up in turn 2
    session_tick(session_id=session.pk, work=work)
    assert seen == [["first"], ["second"]]
    assert Trigger.objects.get(pk=second.pk).turn.number == 2


def test_a_tick_with_nothing_queued_starts_no_turn(session):
    assert session_tick(session_id=session.pk, work=address_all) == "idle"
    assert not Turn.objects.filter(session=session).exists()


def test_unaddressed_messages_fire_again_until_the_refire_cap_then_are_given_up(session):
    # given a refire cap of 2 and a turn that never addresses the message
    limits = harness_settings_get(workspace_id=session.workspace_id)
    limits.refire_cap = 2
    limits.save()
    message = message_send(session=session, content="are you there?")
    turns = []

    def ignore(snapshot):
        turns.append([str(m.pk) for m in snapshot.messages])

    # when the session ticks repeatedly
    outcomes = [session_tick(session_id=session.pk, work=ignore) for _ in range(4)]
    # then the message is taken up by the first turn and by two more, then given up (and said so)
    assert outcomes == ["ended", "ended", "ended", "idle"]
    assert turns == [[str(message.pk)]] * 3
    message.refresh_from_db()
    assert message.given_up_at is not None and message.refires == 2
    ended = SessionEvent.objects.filter(session=session, kind="TurnEnded").order_by("seq")
    assert [e.data["unaddressed_ids"] for e in ended] == [[str(message.pk)], [str(message.pk)], []]
    assert ended.last().data["given_up_ids"] == [str(message.pk)]


def test_a_message_addressed_by_a_later_turn_stops_firing(session):
    message = message_send(session=session, content="later")
    session_tick(session_id=session.pk, work=lambda snapshot: None)
    session_tick(session_id=session.pk, work=address_all)
    assert session_tick(session_id=session.pk, work=address_all) == "idle"
    message.refresh_from_db()
    assert message.addressed and message.addressed_note == "done" and message.refires == 1


def test_a_failing_turn_reports_turn_failure_and_leaves_its_messages_unaddressed(session):
    message = message_send(session=session, content="boom")

    def explode(snapshot):
        raise RuntimeError("the model is down")

    assert session_tick(session_id=session.pk, work=explode) == "failed"
    failure = SessionEvent.objects.get(session=session, kind="TurnFailure")
    assert "the model is down" in failure.data["error"]
    assert failure.data["unaddressed_ids"] == [str(message.pk)]
    assert Turn.objects.get(session=session).status == Turn.Status.FAILED
    assert not Session.objects.get(pk=session.pk).runner  # the claim was released


def test_events_are_numbered_one_by_one_per_session(workspace):
    a = session_create(workspace=workspace)
    b = session_create(workspace=workspace)
    for text in ("one", "two", "three"):
        message_send(session=a, content=text)
    message_send(session=b, content="other")
    assert list(SessionEvent.objects.filter(session=a).order_by("seq").values_list("seq", flat=True)) == [1, 2, 3]
    assert list(SessionEvent.objects.filter(session=b).values_list("seq", flat=True)) == [1]
    a.refresh_from_db()
    assert a.last_event_seq == 3


def test_the_same_idempotency_key_queues_a_message_once(session):
    first = message_send(session=session, content="hello", idempotency_key="k1")
    again = message_send(session=session, content="hello", idempotency_key="k1")
    assert first.pk == again.pk
    assert Trigger.objects.filter(session=session).count() == 1


@pytest.mark.django_db(transaction=True)
def test_only_one_turn_runs_per_session_while_others_tick_it(workspace, monkeypatch):
    # The two runners here are this test's threads: keep the real worker that other tests started
    # in this session from ticking the session on commit and taking the turn first.
    monkeypatch.setattr(services, "session_tick_enqueue", lambda **kwargs: None)
    # given a turn in progress on one thread (its own database connection)
    # (triggers queued with the ORM: no tick reaches the broker, where a test worker could take it)
    session = session_create(workspace=workspace)
    queue = lambda text: Trigger.objects.create(workspace=workspace, session=session, kind="user_message",  # noqa: E731
                                                content=text)
    queue("slow one")
    started, release = threading.Event(), threading.Event()
    outcome = {}

    def slow(snapshot):
        started.set()
        assert release.wait(10)
        address_all(snapshot)

    def run():
        try:
            outcome["a"] = session_tick(session_id=session.pk, work=slow)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(10)
    # when another runner ticks the same session, even with a new message queued
    queue("meanwhile")
    outcome["b"] = session_tick(session_id=session.pk, work=address_all)
    release.set()
    thread.join(10)
    # then it found the session busy, and the message waited for the next turn
    assert outcome == {"a": "ended", "b": "busy"}
    assert Trigger.objects.get(content="meanwhile").state == Trigger.State.QUEUED
    assert session_tick(session_id=session.pk, work=address_all) == "ended"
    assert list(Turn.objects.filter(session=session).values_list("number", flat=True)) == [1, 2]


def test_a_claim_held_by_a_dead_process_on_this_host_is_taken_over(session):
    # given a session claimed by a process that no longer exists
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = claims.runner_id().split(":")[0]
    Session.objects.filter(pk=session.pk).update(runner=f"{host}:{dead.pid}:1", runner_heartbeat_at=claims.timezone.now())
    # then a claim succeeds at once
    assert claims.claim(Session, session.pk, stale_after=300)


def test_a_claim_held_by_a_live_runner_is_respected_until_it_goes_silent(session):
    host = claims.runner_id().split(":")[0]
    live = f"{host}:{os.getppid()}:1"
    Session.objects.filter(pk=session.pk).update(runner=live, runner_heartbeat_at=claims.timezone.now())
    assert not claims.claim(Session, session.pk, stale_after=300)
    # and a runner whose heartbeat failed learns it lost the claim once it is taken over
    Session.objects.filter(pk=session.pk).update(runner_heartbeat_at=claims.timezone.now() - claims.timedelta(seconds=301))
    assert claims.claim(Session, session.pk, stale_after=300)
    Session.objects.filter(pk=session.pk).update(runner=live)
    with pytest.raises(claims.ClaimLost):
        claims.heartbeat(Session, session.pk)


def test_a_turn_left_running_by_a_dead_runner_is_resumed_with_its_snapshot(session):
    # given a turn that started (snapshot taken) and whose runner died
    message = message_send(session=session, content="resume me")

    def die(snapshot):
        raise SystemExit  # not an Exception: the turn stays running, as if the process vanished

    with pytest.raises(SystemExit):
        session_tick(session_id=session.pk, work=die)
    message_send(session=session, content="newer")
    assert Turn.objects.get(session=session).status == Turn.Status.RUNNING
    seen = []

    def work(snapshot):
        seen.append((snapshot.turn.number, [m.content for m in snapshot.messages]))
        address_all(snapshot)

    # when the session is ticked again
    session_tick(session_id=session.pk, work=work)
    # then the same turn resumed with the same snapshot; the newer message waits for turn 2
    assert seen == [(1, ["resume me"])]
    message.refresh_from_db()
    assert message.addressed
    session_tick(session_id=session.pk, work=work)
    assert seen[-1] == (2, ["newer"])


def test_the_sweep_ticks_sessions_with_work_and_no_live_runner(workspace):
    idle = session_create(workspace=workspace)
    waiting = session_create(workspace=workspace)
    message_send(session=waiting, content="lost tick")
    busy = session_create(workspace=workspace)
    message_send(session=busy, content="being worked on")
    Session.objects.filter(pk=busy.pk).update(runner="elsewhere:1:1", runner_heartbeat_at=claims.timezone.now())
    ticked = sessions_sweep()
    assert waiting.pk in ticked and busy.pk not in ticked and idle.pk not in ticked


def test_harness_settings_are_created_once_per_workspace(workspace):
    assert harness_settings_get(workspace_id=workspace.pk).pk == harness_settings_get(workspace_id=workspace.pk).pk
    assert HarnessSettings.objects.filter(workspace=workspace).count() == 1


def test_the_sweep_does_not_wait_for_a_runner_that_died_on_this_host(workspace):
    # given a session whose turn is held by a process of this host that no longer exists, with a
    # fresh heartbeat (it was killed a moment ago)
    session = session_create(workspace=workspace)
    message_send(session=session, content="mid-turn")
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = claims.runner_id().split(":")[0]
    Session.objects.filter(pk=session.pk).update(runner=f"{host}:{dead.pid}:1", runner_heartbeat_at=claims.timezone.now())
    # then the sweep ticks it at once
    assert session.pk in sessions_sweep()


def test_a_message_is_withdrawn_only_while_no_turn_has_taken_it(workspace):
    # given two messages in a session, the first taken by a turn (its work never ends: it parks)
    session = session_create(workspace=workspace)
    taken = message_send(session=session, content="first")

    def park(snapshot):
        raise services.TurnParked("waits")

    assert session_tick(session_id=session.pk, work=park) == "parked"
    waiting = message_send(session=session, content="second")
    # when both are withdrawn
    withdrawn = [services.message_withdraw(session_id=session.pk, trigger_id=t.pk, note="cancelled")
                 for t in (taken, waiting)]
    # then only the one no turn had taken is: consumed and addressed, so no turn answers it
    assert withdrawn == [False, True]
    waiting.refresh_from_db()
    assert (waiting.state, waiting.addressed, waiting.addressed_note) == ("consumed", True, "cancelled")
    taken.refresh_from_db()
    assert (taken.state, taken.addressed) == ("snapshotted", False)
