import time

import pytest

from fathom.redis_client import get_redis
from fathom.tasks import BEAT_LAST_TICK_KEY, heartbeat, ping
from tests.conftest import wait_for


def test_health_answers_503_and_says_why_when_no_worker_answers(client, db):
    response = client.get("/v1/health")
    assert response.status_code == 503
    body = response.json()
    assert body["ok"] is False
    assert body["database"]["ok"] and body["database"]["pgvector_version"]
    assert body["database"]["server_version"].startswith("18")
    assert body["redis"]["ok"] and body["redis"]["version"]
    assert body["workers"]["ok"] is False
    assert body["workers"]["queues_without_worker"] == ["fires", "quality", "memory", "maintenance"]


@pytest.mark.worker
def test_health_is_200_with_a_worker_on_every_queue_and_a_recent_beat_tick(client, transactional_db, celery_worker):
    heartbeat.delay()  # its result is ignored, so .get() would not wait for it: wait for what it writes
    wait_for(lambda: get_redis().get(BEAT_LAST_TICK_KEY), timeout=10)
    response = client.get("/v1/health")
    assert response.status_code == 200, {name: part for name, part in response.json().items()
                                         if isinstance(part, dict) and not part["ok"]}
    body = response.json()
    worker = next(w for w in body["workers"]["workers"] if w["name"].startswith(celery_worker))
    assert worker["queues"] == ["fires", "maintenance", "memory", "quality"]
    assert body["beat"]["ok"] and body["beat"]["age_seconds"] < 10


@pytest.mark.worker
@pytest.mark.parametrize("queue", ["fires", "quality", "memory", "maintenance"])
def test_a_real_worker_runs_a_task_from_each_queue(transactional_db, celery_worker, queue):
    started = time.monotonic()
    result = ping.apply_async(args=[queue], queue=queue).get(timeout=15)
    assert result["token"] == queue
    assert result["queue"] == queue
    assert result["worker"].startswith(celery_worker)
    assert time.monotonic() - started < 15


def test_the_heartbeat_is_a_database_schedule_entry(db):
    from django_celery_beat.models import PeriodicTask

    entry = PeriodicTask.objects.get(name="maintenance.heartbeat")
    assert entry.task == "maintenance.heartbeat"
    assert entry.enabled and entry.interval.every == 15
    assert entry.queue == "maintenance"
