"""Beat entries owned by the fires."""

from fathom.schedules import interval_task_ensure

SWEEP_TASK = "maintenance.harness_sweep"


def sweep_schedule_ensure(**models):
    return interval_task_ensure(
        task=SWEEP_TASK, every_seconds=30, **models,
        description="Every 30 s: ticks sessions that have work but no live runner "
                    "(a lost tick, a worker that died mid-turn, unaddressed messages due to fire again).")
