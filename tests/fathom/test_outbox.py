"""The transactional outbox: a send is recorded with the change it follows, published once that change
commits (its row deleted then), never for a change rolled back; a send the broker refused stays and
beat's relay publishes it on a worker."""

from datetime import timedelta

import pytest
import redis
from celery import Celery, chord, group, signature
from celery.exceptions import Ignore
from django.db import OperationalError, transaction
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from fathom import outbox
from fathom.celery import app
from fathom.outbox import OutboxMessage
from fathom.redis_client import get_redis
from fathom.tasks import BEAT_LAST_TICK_KEY
from tests.conftest import wait_for


@pytest.mark.django_db(transaction=True)
def test_a_send_is_recorded_in_its_transaction_and_deleted_once_published():
    with transaction.atomic():
        outbox.enqueue("platform.ping", args=["outbox"], queue="maintenance", countdown=30)
        row = OutboxMessage.objects.get()
        # recorded with the change, not published yet
        assert row.message["task"] == "platform.ping" and row.message["args"] == ["outbox"]
        assert row.message["options"]["queue"] == "maintenance"
        assert timedelta(seconds=29) < row.due_at - timezone.now() <= timedelta(seconds=30)
    # published at commit: the row is gone
    assert not OutboxMessage.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_change_rolled_back_sends_nothing():
    with pytest.raises(RuntimeError), transaction.atomic():
        outbox.enqueue("platform.ping", args=["never"], queue="maintenance")
        raise RuntimeError("rolled back")
    assert not OutboxMessage.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_send_its_sweep_makes_again_is_published_at_commit_without_a_row():
    with transaction.atomic():
        outbox.enqueue("platform.ping", args=["swept"], queue="maintenance", swept=True)
        assert not OutboxMessage.objects.exists()
    assert not OutboxMessage.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_send_its_sweep_makes_again_is_recorded_when_the_broker_refuses_it(monkeypatch):
    def refused(*args, **kwargs):
        raise redis.exceptions.ConnectionError("the broker is away")

    monkeypatch.setattr(outbox, "_send", refused)
    with transaction.atomic():
        outbox.enqueue("platform.ping", args=["swept"], queue="maintenance", countdown=30, swept=True)
    row = OutboxMessage.objects.get()
    assert row.message["task"] == "platform.ping" and row.message["args"] == ["swept"]
    assert timedelta(seconds=29) < row.due_at - timezone.now() <= timedelta(seconds=30)


@pytest.mark.django_db(transaction=True)
def test_a_chord_whose_results_cannot_be_subscribed_to_is_recorded_as_refused(monkeypatch):
    # given a result store that is away as a chord's header is sent: Celery's Redis result store wraps the
    # connection error in a RuntimeError (celery.backends.asynchronous.reconnect_on_error)
    def away(task_id):
        try:
            raise redis.exceptions.ConnectionError("Error 111 connecting to the result store")
        except redis.exceptions.ConnectionError as exc:
            raise RuntimeError("Retry limit exceeded while trying to reconnect to the Celery result store") from exc

    monkeypatch.setattr(app.backend.result_consumer, "consume_from", away)
    header = group(signature("platform.ping", args=[n], queue="maintenance") for n in ("a", "b"))
    # when it is sent as a swept send, then it is kept whole for the relay, as a refused publish is
    with transaction.atomic():
        outbox.enqueue(chord(header, signature("platform.ping", args=["joined"], queue="maintenance")), swept=True)
    assert OutboxMessage.objects.get().message["task"] == "celery.chord"
    # and a RuntimeError of another cause is not taken for Redis away
    def broken(task_id):
        raise RuntimeError("a bug")

    monkeypatch.setattr(app.backend.result_consumer, "consume_from", broken)
    with pytest.raises(RuntimeError, match="a bug"), transaction.atomic():
        outbox.enqueue(chord(header, signature("platform.ping", args=["joined"], queue="maintenance")), swept=True)


def test_a_chord_is_kept_whole(db):
    header = group(signature("quality.verify_perspective", args=[1, 1, p, "t", {}]) for p in ("a", "b"))
    with transaction.atomic():
        outbox.enqueue(chord(header, signature("quality.verification_join", args=[1, 1, "t"])))
        kept = signature(OutboxMessage.objects.get().message, app=app)
    assert [task.args[2] for task in kept.tasks] == ["a", "b"]
    assert kept.body.task == "quality.verification_join" and kept.body.args == [1, 1, "t"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_relay_publishes_a_send_the_broker_refused_and_a_worker_runs_it(celery_worker):
    # given a send whose publish the broker refused a while ago (its row left behind)
    get_redis().delete(BEAT_LAST_TICK_KEY)
    refused = timezone.now() - timedelta(seconds=60)
    OutboxMessage.objects.create(message=dict(app.signature("maintenance.heartbeat", queue="maintenance")),
                                 due_at=refused, created_at=refused, attempts=3)
    young = OutboxMessage.objects.create(message=dict(app.signature("maintenance.heartbeat")), due_at=timezone.now())
    # when beat's relay runs on a worker
    app.send_task("maintenance.outbox_relay")
    # then the refused send is published and run; a row younger than the grace is its commit's to send
    wait_for(lambda: get_redis().get(BEAT_LAST_TICK_KEY), timeout=15)
    assert list(OutboxMessage.objects.values_list("pk", flat=True)) == [young.pk]


def test_the_relay_is_a_beat_entry_every_few_seconds(db):
    entry = PeriodicTask.objects.get(name="maintenance.outbox_relay")
    assert entry.enabled and entry.interval.every == 3 and entry.queue == "maintenance"


def test_a_retry_the_broker_refuses_is_kept_in_the_outbox_instead_of_rejected_for_good(db, tmp_path):
    # given a task (on the project's base) whose broker is gone, failing with a transient error
    gone = Celery("gone", broker=f"redis+socket://{tmp_path / 'gone.sock'}", task_cls=outbox.Task,
                  set_as_current=False)  # the project's app stays the current one
    gone.conf.broker_transport_options = {"max_retries": 0}

    @gone.task(name="fires.session_tick", bind=True, max_retries=3)
    def tick(self, session_id):
        return session_id

    tick.push_request(id="tick-1", args=["s-1"], kwargs={}, retries=1, called_directly=False,
                      delivery_info={"exchange": "", "routing_key": "fires"})
    try:
        # when it asks to be retried: Celery cannot publish the retry
        with pytest.raises(Ignore):
            tick.retry(exc=OperationalError("the database went away"), countdown=4)
    finally:
        tick.pop_request()
    # then the retry is in the outbox (the relay publishes it), counted as the task's second retry
    kept = OutboxMessage.objects.get()
    assert (kept.message["task"], kept.message["args"]) == ("fires.session_tick", ["s-1"])
    assert kept.message["options"]["task_id"] == "tick-1" and kept.message["options"]["retries"] == 2
    assert timedelta(seconds=3) < kept.due_at - timezone.now() <= timedelta(seconds=4)
