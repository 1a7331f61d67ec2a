"""The resolution job's beat entry: one django-celery-beat PeriodicTask per workspace whose crontab
follows WorldConfig.resolution_schedule. Saving the configuration through the service moves it."""

import json

from django_celery_beat.models import CrontabSchedule, PeriodicTask

RESOLUTION_TASK = "maintenance.festinger_resolution"
# A run that waited this long for a worker is dropped; the next scheduled one comes anyway.
RESOLUTION_EXPIRE_SECONDS = 3600


def resolution_task_name(*, workspace_id: int) -> str:
    return f"festinger:resolution:workspace-{workspace_id}"


def resolution_schedule_sync(*, config) -> PeriodicTask:
    """The workspace's resolution entry exists, on the configured crontab (UTC), enabled as configured."""
    minute, hour, day_of_month, month_of_year, day_of_week = config.resolution_schedule.split()
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month_of_year, day_of_week=day_of_week,
        timezone="UTC")
    task, _ = PeriodicTask.objects.update_or_create(
        name=resolution_task_name(workspace_id=config.workspace_id),
        defaults={
            "task": RESOLUTION_TASK,
            "crontab": crontab,
            "interval": None,
            "kwargs": json.dumps({"workspace_id": config.workspace_id}),
            "queue": "maintenance",
            "expire_seconds": RESOLUTION_EXPIRE_SECONDS,
            "enabled": config.resolution_enabled,
            "description": f"Festinger's resolution job for workspace {config.workspace_id}: drains the "
                           f"conflict queue through the {config.resolver_role!r} model on "
                           f"'{config.resolution_schedule}' (UTC). Edit the schedule in the Festinger "
                           "configuration, not here.",
        },
    )
    return task
