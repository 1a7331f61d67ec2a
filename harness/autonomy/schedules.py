"""Autonomy's beat entries: the sweep (every minute: pressure samples, decisions, Sits) and, per
workspace that has a cron, its scheduled Sits. Both are django-celery-beat rows, editable in admin."""

import json

from django_celery_beat.models import CrontabSchedule, PeriodicTask

from fathom.cron import cron_parse
from fathom.schedules import interval_task_ensure

SWEEP_TASK = "maintenance.autonomy_sweep"
SCHEDULED_SIT_TASK = "fires.autonomy_scheduled_sit"
SWEEP_SECONDS = 60


def sweep_schedule_ensure(**models):
    return interval_task_ensure(
        task=SWEEP_TASK, every_seconds=SWEEP_SECONDS, **models,
        description="Every minute: samples every workspace's pressure into its series, records what autonomy "
                    "decides (sit, would sit, skip and why) and starts an autonomous Sit where the switch is on.")


def dedup_schedule_ensure(**models):
    return interval_task_ensure(
        task="maintenance.qa_marker_dedup", every_seconds=3600, **models,
        description="Every hour: folds Q/A markers that ask the same question into a level-1 provenance, "
                    "through the proposals gate.")


def scheduled_sit_name(workspace) -> str:
    return f"autonomy:{workspace.slug}"


def scheduled_sit_ensure(*, settings, workspace) -> PeriodicTask | None:
    """The workspace's scheduled-Sit beat entry matches its settings: present with the cron (in its
    time zone) while it has one and is not switched off, absent otherwise."""
    name = scheduled_sit_name(workspace)
    if not settings.cron or settings.mode == "off":
        PeriodicTask.objects.filter(name=name).delete()
        return None
    cron = cron_parse(settings.cron)
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=cron.minute, hour=cron.hour, day_of_month=cron.day_of_month, month_of_year=cron.month_of_year,
        day_of_week=cron.day_of_week, timezone=settings.time_zone)
    entry, _ = PeriodicTask.objects.update_or_create(name=name, defaults={
        "task": SCHEDULED_SIT_TASK, "crontab": crontab, "interval": None, "queue": "fires",
        "kwargs": json.dumps({"workspace_id": workspace.pk}), "expire_seconds": 600, "enabled": True,
        "description": f"Scheduled autonomous Sit of workspace {workspace.slug} on '{cron}' ({settings.time_zone}); "
                       "quiet hours, idleness, caps and the one-Sit-per-window claim still apply."})
    return entry
