"""Beat entries owned by the harness, created in code and editable in admin."""

from django_celery_beat.models import IntervalSchedule, PeriodicTask

SWEEP_TASK = "maintenance.harness_sweep"


def sweep_schedule_ensure(*, every_seconds: int = 30, periodic_task_model=PeriodicTask,
                          interval_model=IntervalSchedule):
    """The sweep entry exists (an operator's edits in admin are kept: only a missing one is made)."""
    interval, _ = interval_model.objects.get_or_create(every=every_seconds, period="seconds")
    task, _ = periodic_task_model.objects.get_or_create(
        name=SWEEP_TASK,
        defaults={
            "task": SWEEP_TASK,
            "interval": interval,
            "queue": "maintenance",
            "expire_seconds": every_seconds * 2,
            "description": "Every 30 s: ticks sessions that have work but no live runner "
                           "(a lost tick, a worker that died mid-turn, unaddressed messages due to fire again).",
        },
    )
    return task
