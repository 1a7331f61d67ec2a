"""Beat entries owned by the platform, created in code and editable in admin."""

from django_celery_beat.models import IntervalSchedule, PeriodicTask

HEARTBEAT_TASK = "maintenance.heartbeat"


def heartbeat_schedule_ensure(*, every_seconds: int = 15, periodic_task_model=PeriodicTask,
                              interval_model=IntervalSchedule):
    """The heartbeat entry exists. An operator's edits in admin (interval, enabled) are kept:
    only a missing entry is created."""
    interval, _ = interval_model.objects.get_or_create(every=every_seconds, period="seconds")
    task, _ = periodic_task_model.objects.get_or_create(
        name=HEARTBEAT_TASK,
        defaults={
            "task": HEARTBEAT_TASK,
            "interval": interval,
            "queue": "maintenance",
            "expire_seconds": every_seconds * 2,
            "description": "Records beat's last tick every 15 s; /v1/health reports it.",
        },
    )
    return task
