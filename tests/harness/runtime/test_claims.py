"""Claims outlive a connection: the caller's own claim is its own to take again, a held claim's
heartbeat is refreshed by its process's heartbeat thread however long the holder waits, and liveness is
that heartbeat, not whether the holder's process exists."""

import os
import threading
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from harness.runtime import claims
from harness.runtime.models import Session, Trigger
from harness.runtime.services import harness_settings_get, session_create, sessions_sweep
from tests.conftest import wait_for


@pytest.fixture
def session(workspace):
    return session_create(workspace=workspace)


@pytest.mark.django_db(transaction=True)  # the other thread sees the session
def test_a_claim_held_by_the_caller_is_its_own_to_take_again(session):
    # given a session this thread claimed, and whose release never reached the database
    assert claims.claim(Session, session.pk, stale_after=20)
    # then this thread takes it again (what held it before is over), and another thread does not
    assert claims.claim(Session, session.pk, stale_after=20)
    elsewhere = []
    thread = threading.Thread(target=lambda: (elsewhere.append(claims.claim(Session, session.pk, stale_after=20)),
                                              connections.close_all()))
    thread.start()
    thread.join()
    assert elsewhere == [False]
    assert claims.release(Session, session.pk)


@pytest.mark.django_db(transaction=True)  # the heartbeat thread reads and writes what this test committed
def test_the_heartbeat_thread_keeps_a_held_claim_alive_while_its_holder_waits(session, monkeypatch):
    monkeypatch.setattr(claims, "HEARTBEAT_SECONDS", 0.2)
    long_ago = timezone.now() - timedelta(minutes=10)
    # given a claim whose holder has written nothing for ten minutes (a long model call)
    assert claims.claim(Session, session.pk, stale_after=20)
    Session.objects.filter(pk=session.pk).update(runner_heartbeat_at=long_ago)
    # then its heartbeat is fresh again within a few beats (the thread may be in its last 5 s wait)
    wait_for(lambda: Session.objects.get(pk=session.pk).runner_heartbeat_at > timezone.now() - timedelta(seconds=2),
             timeout=10)
    # and once released, nothing beats it any more
    assert claims.release(Session, session.pk)
    Session.objects.filter(pk=session.pk).update(runner=claims.runner_id(), runner_heartbeat_at=long_ago)
    time.sleep(1)
    assert Session.objects.get(pk=session.pk).runner_heartbeat_at == long_ago


def test_a_claim_whose_heartbeat_is_old_is_swept_though_its_process_lives(session):
    # given a session with a queued message, held by a live process of this host whose heartbeat stopped
    host = claims.runner_id().split(":")[0]
    Trigger.objects.create(workspace_id=session.workspace_id, session=session, kind=Trigger.Kind.USER_MESSAGE,
                           content="still there?")
    stale_after = harness_settings_get(workspace_id=session.workspace_id).stale_after_seconds
    assert stale_after == 20  # the default: four heartbeats missed
    silent = timezone.now() - timedelta(seconds=stale_after + 1)
    Session.objects.filter(pk=session.pk).update(runner=f"{host}:{os.getppid()}:1", runner_heartbeat_at=silent)
    # then the sweep ticks it, and a tick takes the claim over
    assert sessions_sweep() == [session.pk]
    assert claims.claim(Session, session.pk, stale_after=stale_after)
    # while a heartbeat of a few seconds ago still counts as alive
    Session.objects.filter(pk=session.pk).update(runner=f"{host}:{os.getppid()}:1",
                                                 runner_heartbeat_at=timezone.now() - timedelta(seconds=5))
    assert sessions_sweep() == []
