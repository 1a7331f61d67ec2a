"""The embedding task: a real worker embeds after commit; the real OpenAI SDK, pointed at a local
server speaking the embeddings wire protocol, shows retries on provider errors."""

import signal
import time
from contextlib import contextmanager
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import before_task_publish
from django.utils import timezone

from fathom.celery import app
from lake.embedders import get_embedder
from lake.models import Delta
from lake.tasks import embed_deltas, embed_missing
from tests.lake.support import HANG, EmbeddingsServer


@pytest.fixture
def openai_embeddings(settings):
    """use(statuses) -> a local embeddings server the `openai` embedder is pointed at."""
    servers = []

    def use(statuses=()):
        server = EmbeddingsServer(statuses)
        servers.append(server)
        settings.EMBEDDER, settings.EMBEDDING_MODEL = "openai", "text-embedding-3-small"
        settings.EMBEDDING_API_KEY, settings.EMBEDDING_BASE_URL = "sk-test", server.url
        return server

    yield use
    for server in servers:
        server.close()


@contextmanager
def soft_time_limit(seconds: float):
    """What a prefork worker does when a task overruns its soft time limit: a signal raises
    SoftTimeLimitExceeded wherever the task is (here, waiting on the provider)."""
    def expire(signum, frame):
        raise SoftTimeLimitExceeded()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def published(django_capture_on_commit_callbacks):
    """published() -> a context in which the on-commit callbacks run, yielding the list of the tasks
    they publish (name, args)."""
    @contextmanager
    def record_within():
        sent = []

        def record(sender=None, body=None, **_kwargs):
            sent.append((sender, list(body[0])))

        before_task_publish.connect(record)
        try:
            with django_capture_on_commit_callbacks(execute=True):
                yield sent
        finally:
            before_task_publish.disconnect(record)
            app.control.purge()  # no worker is to run tasks for rows this test never commits

    return record_within


def test_a_batch_that_overruns_the_soft_time_limit_is_queued_again_as_two_halves(
        workspace, moments, openai_embeddings, published):
    server = openai_embeddings(statuses=[HANG])
    ids = [d.id for d in moments("one", "two", "three", "four", "five", embed=False)]
    get_embedder()  # built (the SDK imported) before the clock starts, as in a worker that embedded before

    with published() as sent, soft_time_limit(0.3):
        result = embed_deltas.apply(args=[ids])

    assert result.state == "SUCCESS" and result.result == 0
    assert sent == [("memory.embed_deltas", [ids[:3]]), ("memory.embed_deltas", [ids[3:]])]
    assert [len(request["input"]) for request in server.requests] == [5]
    assert Delta.objects.filter(pk__in=ids, embedding__isnull=True).count() == 5


def test_one_delta_that_overruns_the_soft_time_limit_is_retried_with_backoff(
        workspace, moments, openai_embeddings, published):
    server = openai_embeddings(statuses=[HANG])
    (delta,) = moments("alone", embed=False)
    get_embedder()

    with published() as sent, soft_time_limit(0.3):
        result = embed_deltas.apply(args=[[delta.id]])

    assert result.state == "SUCCESS" and result.result == 1, "retried after the overrun, then embedded"
    assert len(server.requests) == 2 and sent == []
    assert Delta.objects.get(pk=delta.id).embedding is not None


def test_the_sweep_queues_the_deltas_left_without_a_vector_after_the_grace_period(
        workspace, moments, settings, published):
    settings.EMBEDDING_SWEEP_GRACE_SECONDS, settings.EMBEDDING_BATCH_SIZE = 60, 2
    now = timezone.now()
    old = moments("old one", "old two", "old three", start=now - timedelta(hours=1), step=1, embed=False)
    moments("embedded long ago", start=now - timedelta(hours=2))
    moments("just written", start=now, embed=False)  # its own task is on its way

    with published() as sent:
        assert embed_missing.apply().result == 3

    assert sent == [("memory.embed_deltas", [[old[0].id, old[1].id]]),
                         ("memory.embed_deltas", [[old[2].id]])]


def test_the_task_retries_a_provider_outage_then_embeds(workspace, moments, openai_embeddings):
    server = openai_embeddings(statuses=[503, 429])
    deltas = moments("first moment", "second moment", embed=False)

    embed_deltas.apply(args=[[d.id for d in deltas]])

    assert len(server.requests) == 3, "two failures retried, then the answer"
    assert server.requests[-1]["model"] == "text-embedding-3-small" and server.requests[-1]["dimensions"] == 384
    rows = Delta.objects.filter(pk__in=[d.id for d in deltas])
    assert all(row.embedding is not None and row.embedding_model == "openai:text-embedding-3-small" for row in rows)


def test_the_task_does_not_retry_a_permanent_provider_error(workspace, moments, openai_embeddings):
    server = openai_embeddings(statuses=[401])
    (delta,) = moments("a moment", embed=False)

    result = embed_deltas.apply(args=[[delta.id]])

    assert result.state == "FAILURE" and "401" in str(result.result)
    assert len(server.requests) == 1
    assert Delta.objects.get(pk=delta.id).embedding is None


def test_the_task_is_idempotent(workspace, moments, openai_embeddings):
    server = openai_embeddings()
    (delta,) = moments("a moment", embed=False)

    assert embed_deltas.apply(args=[[delta.id]]).result == 1
    assert embed_deltas.apply(args=[[delta.id]]).result == 0
    assert len(server.requests) == 1, "a redelivered task finds the work done and asks the provider nothing"


@pytest.mark.worker
def test_a_worker_embeds_new_deltas_after_commit_and_search_finds_them_by_vector(
        transactional_db, celery_worker, api):
    response = api.post("/v1/deltas", [{"content": f"telescope mirror grinding log {i}"} for i in range(3)],
                        format="json")
    ids = [row["id"] for row in response.json()]
    assert response.status_code == 201 and not any(row["embedded"] for row in response.json())

    deadline = time.monotonic() + 30
    while Delta.objects.filter(pk__in=ids, embedding__isnull=True).exists():
        assert time.monotonic() < deadline, "the worker did not embed the deltas"
        time.sleep(0.1)

    result = api.post("/v1/search", {"query": "telescope mirror", "depth": "shallow"}, format="json").json()
    hits = [row for row in result["rows"] if row["role"] == "hit"]
    assert {row["id"] for row in hits} == set(ids)
    assert all("vector" in row["scores"]["found_by"] for row in hits)
