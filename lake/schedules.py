"""Beat entries owned by the lake."""

from fathom.schedules import interval_task_ensure

REEMBED_STALE_TASK = "memory.reembed_stale"


def reembed_stale_schedule_ensure(**models):
    return interval_task_ensure(
        task=REEMBED_STALE_TASK, every_seconds=600, queue="memory", **models,
        description="Every 10 min: embeds again, in batches, the deltas another embedder made (after an "
                    "upgrade of the offline embedder or a change of EMBEDDER / EMBEDDING_MODEL); "
                    "with nothing stale it costs one query.")
