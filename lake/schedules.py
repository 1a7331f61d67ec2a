"""Beat entries owned by the lake."""

from fathom.schedules import interval_task_ensure

REEMBED_STALE_TASK = "memory.reembed_stale"
EMBED_MISSING_TASK = "memory.embed_missing"


def reembed_stale_schedule_ensure(**models):
    return interval_task_ensure(
        task=REEMBED_STALE_TASK, every_seconds=600, queue="memory", **models,
        description="Every 10 min: embeds again, in batches, the deltas another embedder made (after an "
                    "upgrade of the offline embedder or a change of EMBEDDER / EMBEDDING_MODEL); "
                    "with nothing stale it costs one query.")


def embed_missing_schedule_ensure(**models):
    return interval_task_ensure(
        task=EMBED_MISSING_TASK, every_seconds=300, queue="memory", **models,
        description="Every 5 min: queues, in batches, the embedding of deltas still without a vector "
                    "FATHOM_EMBEDDING_SWEEP_GRACE_SECONDS after their moment (their own task gave up "
                    "during a provider outage, or was never sent); with none waiting it costs one query.")
