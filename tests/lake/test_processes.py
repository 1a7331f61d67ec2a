"""The lake across processes: a real worker retries a provider outage and embeds each delta once,
a provider that hangs and then goes down loses no delta, and the child -> parent index answers for
provenance another process wrote."""

import json
import subprocess
import sys
import time
import uuid

import pytest
from django_celery_beat.models import PeriodicTask

from fathom.celery import app
from lake.models import Delta
from lake.schedules import EMBED_MISSING_TASK
from lake.tasks import embed_deltas
from tests.conftest import REPO_ROOT, start_worker, stop_worker, wait_for, wait_for_worker, worker_env
from tests.lake.support import HANG, EmbeddingsServer

pytestmark = pytest.mark.worker


@pytest.fixture
def embedding_worker(transactional_db):
    """worker(statuses) -> (local embeddings server, queue): a worker of its own whose `openai`
    embedder talks to a local server answering the queued error statuses first."""
    started = []

    def start(statuses=(), queues=None, env=None):
        server = EmbeddingsServer(statuses)
        name, queue = f"embed-{uuid.uuid4().hex[:6]}", f"lake-test-{uuid.uuid4().hex[:6]}"
        process = start_worker(name, queues=queues or [queue], env={
            "FATHOM_EMBEDDER": "openai", "FATHOM_EMBEDDING_MODEL": "text-embedding-3-small",
            "FATHOM_EMBEDDING_API_KEY": "sk-test", "FATHOM_EMBEDDING_BASE_URL": server.url, **(env or {})})
        started.append((server, process))
        wait_for_worker(name)
        return server, queue

    yield start
    for server, process in started:
        stop_worker(process)
        server.close()


def _unembedded(workspace, *texts) -> list[str]:
    """Deltas waiting for their embedding, written without queueing it (the session's worker,
    when it runs, would otherwise embed them first with the hashing embedder)."""
    return [delta.id for delta in Delta.objects.bulk_create([Delta(workspace=workspace, content=text) for text in texts])]


def _wait(condition, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_worker_retries_provider_errors_then_embeds(workspace, embedding_worker):
    server, queue = embedding_worker(statuses=[503, 429])
    ids = _unembedded(workspace, "kelp forest survey", "sea urchin count")

    embed_deltas.apply_async(args=[ids], queue=queue)

    _wait(lambda: not Delta.objects.filter(pk__in=ids, embedding__isnull=True).exists(), "the embeddings")
    assert len(server.requests) == 3, "two provider errors retried, then the answer"
    assert all(sorted(request["input"]) == ["kelp forest survey", "sea urchin count"] for request in server.requests)
    assert set(Delta.objects.filter(pk__in=ids).values_list("embedding_model", flat=True)) == {
        "openai:text-embedding-3-small"}


def test_a_redelivered_embedding_task_embeds_nothing_twice(workspace, embedding_worker):
    server, queue = embedding_worker()
    first, second = _unembedded(workspace, "tide table", "moon phase")

    embed_deltas.apply_async(args=[[first]], queue=queue)
    _wait(lambda: Delta.objects.get(pk=first).embedding is not None, "the first embedding")
    vector = list(Delta.objects.get(pk=first).embedding)
    embed_deltas.apply_async(args=[[first]], queue=queue)  # the same task again, as a redelivery would
    embed_deltas.apply_async(args=[[first, second]], queue=queue)
    _wait(lambda: Delta.objects.get(pk=second).embedding is not None, "the second embedding")

    assert [request["input"] for request in server.requests] == [["tide table"], ["moon phase"]]
    assert list(Delta.objects.get(pk=first).embedding) == vector


def test_a_provider_that_hangs_then_is_down_then_back_loses_no_delta(api, workspace, embedding_worker, settings):
    # given a worker on the stack's queues whose provider hangs past the embedding task's soft time
    # limit (the limit travels in the task's message: this process sends the writes' tasks)
    settings.EMBEDDING_SOFT_TIME_LIMIT_SECONDS = 1
    server, _ = embedding_worker(queues=["memory", "maintenance"], env={
        "FATHOM_EMBEDDING_SOFT_TIME_LIMIT_SECONDS": "1", "FATHOM_EMBEDDING_SWEEP_GRACE_SECONDS": "2"})
    server.status = HANG
    written = [row["id"] for row in api.post(
        "/v1/deltas", [{"content": f"buoy reading {n}"} for n in range(4)], format="json").json()]
    lost = _unembedded(workspace, "a buoy reading whose task never reached the broker")
    ids = [*written, lost[0]]

    # when every batch overruns, it comes back in halves, down to each delta alone
    wait_for(lambda: len({request["input"][0] for request in server.requests if len(request["input"]) == 1}) == 4,
             timeout=60)
    assert [len(request["input"]) for request in server.requests][:3] == [4, 2, 2]
    # then the provider is down for a while (the single deltas' retries meet 503s)
    server.status = 503
    down_since = len(server.requests)
    wait_for(lambda: len(server.requests) >= down_since + 2, timeout=60, every=1)
    assert api.get("/v1/lake/stats").json()["awaiting_embedding"] == 5
    # and back: beat's sweep queues what is still waiting
    server.status = 200
    entry = PeriodicTask.objects.get(name=EMBED_MISSING_TASK)
    app.send_task(entry.task, args=json.loads(entry.args), kwargs=json.loads(entry.kwargs), queue=entry.queue)

    # then every delta has its vector, with no operator command
    _wait(lambda: not Delta.objects.filter(pk__in=ids, embedding__isnull=True).exists(), "the embeddings", timeout=30)
    assert set(Delta.objects.filter(pk__in=ids).values_list("embedding_model", flat=True)) == {
        "openai:text-embedding-3-small"}
    assert api.get("/v1/lake/stats").json()["awaiting_embedding"] == 0
    assert entry.enabled and entry.interval.every == 300 and entry.expire_seconds == 600


def test_provenance_written_by_another_process_is_found_on_the_way_up_at_once(api, workspace, transactional_db):
    ids = [row["id"] for row in api.post("/v1/deltas", [
        {"content": "glacier melt gauge reading", "source": "field"},
        {"content": "glacier moraine photo", "source": "field"}], format="json").json()]

    def containers():
        # Only moments may be hits (the provenance's source is not "field"): it must come up as their container.
        result = api.post("/v1/search", {"query": "glacier gauge", "limit": 1, "filters": {"source": "field"}},
                          format="json").json()
        return {row["id"]: row for row in result["rows"] if row["role"] == "container"}

    assert containers() == {}
    script = ("from fathom.models import Workspace; from lake.services import provenance_create; "
              f"print(provenance_create(workspace=Workspace.objects.get(slug={workspace.slug!r}), "
              f"title='Glacier fieldwork', child_ids={ids!r}).id)")
    written = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=REPO_ROOT, env=worker_env(),
                             capture_output=True, text=True, timeout=120, check=True)
    episode_id = written.stdout.strip().splitlines()[-1]

    # This process searched before the provenance existed; it finds it now, with nothing to expire.
    found = containers()
    assert list(found) == [episode_id] and found[episode_id]["depth"] == 1
    # And a third process reads the same index.
    other = subprocess.run([sys.executable, "manage.py", "fathom", "lake", "search", "glacier gauge", "--limit", "1",
                            "--workspace", workspace.slug, "--json"], cwd=REPO_ROOT, env=worker_env(),
                           capture_output=True, text=True, timeout=120, check=True)
    assert f"prov · [L1 · 2 deltas · {episode_id}] Glacier fieldwork" in other.stdout
    rows = json.loads(other.stdout[other.stdout.index("\n["):])
    assert episode_id in {row["id"] for row in rows}
