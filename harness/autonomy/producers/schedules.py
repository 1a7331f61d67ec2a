"""The producers' beat entry (a django-celery-beat row, editable in admin)."""

from fathom.schedules import interval_task_ensure

BEAT_TASK = "maintenance.producers_beat"


def producers_schedule_ensure(**models):
    return interval_task_ensure(
        task=BEAT_TASK, every_seconds=6 * 3600, **models,
        description="Every 6 hours: a reflective run and a topical L2 pass in every workspace whose autonomy is on "
                    "(their proposals go through the gate; the topical window run is started by pressure).")
