"""The embedding task: a real worker embeds after commit; the real OpenAI SDK, pointed at a local
server speaking the embeddings wire protocol, shows retries on provider errors."""

import time

import pytest

from lake.models import Delta
from lake.tasks import embed_deltas
from tests.lake.support import EmbeddingsServer


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
