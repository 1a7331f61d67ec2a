"""Beat entries owned by the harness."""

from fathom.schedules import interval_task_ensure

SWEEP_TASK = "maintenance.harness_sweep"


def sweep_schedule_ensure(**models):
    return interval_task_ensure(
        task=SWEEP_TASK, every_seconds=30, **models,
        description="Every 30 s: ticks sessions that have work but no live runner "
                    "(a lost tick, a worker that died mid-turn, unaddressed messages due to fire again).")


CALIBRATION_TASK = "maintenance.quality_calibration"


def calibration_schedule_ensure(**models):
    return interval_task_ensure(
        task=CALIBRATION_TASK, every_seconds=300, **models,
        description="Every 5 minutes: rebuilds each workspace's verifier calibration from up to 3 recent "
                    "mismatches between the verifier's score and the user's thumbs (seed 001).")
