"""The embedding task: a real worker embeds after commit; the real OpenAI SDK, pointed at a local
server speaking the embeddings wire protocol, shows retries on provider errors."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lake.embedders import HashingEmbedder
from lake.models import Delta
from lake.tasks import embed_deltas


class EmbeddingsServer:
    """POST /v1/embeddings: answers the queued statuses first, then 200 with hashing vectors."""

    def __init__(self, statuses=()):
        self.statuses = list(statuses)
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                status = server.statuses.pop(0) if server.statuses else 200
                if status != 200:
                    payload = {"error": {"message": f"scripted {status}", "type": "server_error", "code": None}}
                else:
                    vectors = HashingEmbedder(body["dimensions"]).embed(body["input"])
                    payload = {"object": "list", "model": body["model"],
                               "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                               "usage": {"prompt_tokens": 3, "total_tokens": 3}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


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
