"""Beat entries created in code (by data migrations) and editable in admin."""

from django_celery_beat.models import IntervalSchedule, PeriodicTask

HEARTBEAT_TASK = "maintenance.heartbeat"
TRACES_PRUNE_TASK = "maintenance.traces_prune"
OUTBOX_RELAY_TASK = "maintenance.outbox_relay"
OUTBOX_RELAY_SECONDS = 3


def interval_task_ensure(*, task: str, every_seconds: int, description: str, queue: str = "maintenance",
                         periodic_task_model=PeriodicTask, interval_model=IntervalSchedule):
    """The beat entry running `task` every `every_seconds` exists, named after the task. An
    operator's edits in admin (interval, enabled) are kept: only a missing entry is created.
    Migrations pass their historical models."""
    interval, _ = interval_model.objects.get_or_create(every=every_seconds, period="seconds")
    entry, _ = periodic_task_model.objects.get_or_create(
        name=task,
        defaults={"task": task, "interval": interval, "queue": queue, "expire_seconds": every_seconds * 2,
                  "description": description},
    )
    return entry


def heartbeat_schedule_ensure(**models):
    return interval_task_ensure(task=HEARTBEAT_TASK, every_seconds=15, **models,
                                description="Records beat's last tick every 15 s; /v1/health reports it.")


def traces_prune_schedule_ensure(**models):
    return interval_task_ensure(task=TRACES_PRUNE_TASK, every_seconds=3600, **models,
                                description="Every hour: deletes trace events older than "
                                            "FATHOM_TRACE_RETENTION_DAYS, in batches (0 keeps them).")


def outbox_relay_schedule_ensure(**models):
    return interval_task_ensure(task=OUTBOX_RELAY_TASK, every_seconds=OUTBOX_RELAY_SECONDS, **models,
                                description="Every few seconds: publishes the tasks the broker refused when "
                                            "their transaction committed (fathom.outbox).")
