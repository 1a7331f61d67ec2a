"""The lake's background work: embedding deltas after they are written, and again when the
embedder changes."""

from celery import shared_task, signature
from django.conf import settings

from fathom.transient import retries
from lake.embedders import EmbeddingUnavailable
from lake.services import deltas_embed, deltas_reembed_stale


@shared_task(name="memory.embed_deltas", bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(EmbeddingUnavailable, max_retries=8), soft_time_limit=120, time_limit=180)
def embed_deltas(self, delta_ids: list[str]) -> int:
    """Embed the deltas that still have no vector (a rerun writes nothing twice); a provider outage
    is retried with backoff, a permanent provider error fails the task."""
    return deltas_embed(delta_ids=delta_ids)


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
