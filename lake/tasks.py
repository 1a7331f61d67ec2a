"""The lake's background work: embedding deltas after they are written, and again when the
embedder changes."""

from celery import shared_task, signals, signature
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from fathom.transient import retries
from lake.embedders import EmbeddingUnavailable, get_embedder
from lake.services import (
    deltas_embed,
    deltas_reembed_stale,
    embedding_enqueue,
    embedding_missing_enqueue,
    embedding_time_limits,
)


@shared_task(name="memory.embed_deltas", bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(EmbeddingUnavailable, max_retries=8), **embedding_time_limits())
def embed_deltas(self, delta_ids: list[str]) -> int:
    """Embed the deltas that still have no vector (a rerun writes nothing twice); a provider outage
    is retried with backoff, a permanent provider error fails the task. A batch the provider cannot
    embed within the soft time limit is queued again as two halves, down to one delta, which is
    retried with backoff. What is left unembedded when retries run out, memory.embed_missing queues
    again."""
    try:
        return deltas_embed(delta_ids=delta_ids)
    except SoftTimeLimitExceeded as exc:
        if len(delta_ids) == 1:
            raise EmbeddingUnavailable("the provider took longer than the soft time limit to embed one delta") from exc
        embedding_enqueue(delta_ids=delta_ids, batch_size=(len(delta_ids) + 1) // 2)
        return 0


@shared_task(name="memory.embed_missing", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(), soft_time_limit=60, time_limit=90)
def embed_missing() -> int:
    """Queue the embedding of the deltas still without a vector after the grace period, oldest
    first, in bounded batches (beat runs it)."""
    return embedding_missing_enqueue(limit=settings.EMBEDDING_BATCH_SIZE * 16)


@shared_task(name="memory.reembed_deltas", bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(EmbeddingUnavailable, max_retries=8), soft_time_limit=120, time_limit=180)
def reembed_deltas(self, delta_ids: list[str]) -> int:
    """Embed these deltas again with the configured embedder (an operator's choice in admin), and
    recompute the centroids of the provenances over them. Running it twice writes the same vectors."""
    return deltas_embed(delta_ids=delta_ids, force=True)


@shared_task(name="memory.reembed_stale", bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(EmbeddingUnavailable, max_retries=8), soft_time_limit=120, time_limit=180)
def reembed_stale(self) -> int:
    """One bounded batch of deltas another embedder made (beat runs it); queues the next batch
    while any are left, so a large lake migrates in steps that each fit the time limit."""
    written, more = deltas_reembed_stale(limit=settings.EMBEDDING_BATCH_SIZE * 8)
    if more:
        signature("memory.reembed_stale").delay()
    return written


@signals.worker_process_init.connect
def _embedder_build(**_kwargs):
    """Each worker process builds its embedder as it starts, outside any task: the first import of a
    provider's SDK takes seconds, and a soft time limit that interrupted it would leave the module
    half-imported in that process for good."""
    get_embedder()
