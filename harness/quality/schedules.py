"""Beat entries owned by the quality harness."""

from fathom.schedules import interval_task_ensure

CALIBRATION_TASK = "maintenance.quality_calibration"
RESEND_SWEEP_TASK = "maintenance.quality_resend_sweep"


def calibration_schedule_ensure(**models):
    return interval_task_ensure(
        task=CALIBRATION_TASK, every_seconds=300, **models,
        description="Every 5 minutes: rebuilds each workspace's verifier calibration from up to 3 recent "
                    "mismatches between the verifier's score and the user's thumbs (seed 001).")


def resend_sweep_schedule_ensure(**models):
    return interval_task_ensure(
        task=RESEND_SWEEP_TASK, every_seconds=30, **models,
        description="Every 30 s: sends again the verifier groups and swarms a dead quality worker left "
                    "unanswered for two minutes.")
