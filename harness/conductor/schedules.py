"""Beat entries owned by the conductor."""

from fathom.schedules import interval_task_ensure

SWEEP_TASK = "maintenance.conductor_sweep"


def sweep_schedule_ensure(**models):
    return interval_task_ensure(
        task=SWEEP_TASK, every_seconds=30, **models,
        description="Every 30 s: enqueues again the conductor's capability calls and run steps whose runner "
                    "went silent (a worker that died mid-call).")
