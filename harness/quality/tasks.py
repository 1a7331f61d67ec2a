"""The quality harness's Celery tasks (queue `quality`, the thread-pool worker; the parallel subtasks'
child fires on `fires`): thin, ids in, a service called. Each is idempotent (a verdict, a specialist's analysis is recorded once; a join
checks the chord's token), so acks_late with reject_on_worker_lost is safe: a killed worker's task
runs again."""

from celery import shared_task

from fathom.transient import retries
from harness.quality import schedules, services, subtask_fires, swarm, verification


@shared_task(name="quality.verify", acks_late=True, reject_on_worker_lost=True, ignore_result=True, **retries(),
             soft_time_limit=120, time_limit=180)
def verify(run_id: int, attempt: int, token: str, brief: dict) -> bool:
    """The lone standard verifier of an attempt, sent by the resend sweep (the fire's own run calls it
    first): its verdict recorded and the fire's session ticked again (never raises on a model failure:
    the verdict is then the fallback). Its result is not kept: the verdict is the attempt's, and nobody
    waits for the task (its sender would subscribe to it)."""
    return verification.verification_alone(run_id=run_id, attempt=attempt, token=token, brief=brief) is not None


@shared_task(name="quality.verify_perspective", acks_late=True, reject_on_worker_lost=True, **retries(),
             soft_time_limit=120, time_limit=180)
def verify_perspective(run_id: int, attempt: int, perspective: str, token: str, brief: dict) -> dict:
    """One verifier of the group (standard, or a contrastive perspective); never raises on a model
    failure (the verdict is then the fallback)."""
    return verification.verification_run(run_id=run_id, attempt=attempt, perspective=perspective, brief=brief)


@shared_task(name="quality.verification_join", acks_late=True, reject_on_worker_lost=True, **retries(),
             soft_time_limit=60, time_limit=90)
def verification_join(_verdicts, run_id: int, attempt: int, token: str) -> bool:
    """The verifier chord's callback: the attempt's verdict, and the fire's session ticked again."""
    return verification.verification_join(run_id=run_id, attempt=attempt, token=token)


@shared_task(name="quality.swarm_specialist", acks_late=True, reject_on_worker_lost=True, **retries(),
             soft_time_limit=180, time_limit=240)
def swarm_specialist(run_id: int, angle: str, token: str) -> dict:
    """One specialist of the swarm; a model failure is recorded, not raised (the chord goes on)."""
    return swarm.specialist_run(run_id=run_id, angle=angle)


@shared_task(name="quality.swarm_aggregate", acks_late=True, reject_on_worker_lost=True, **retries(),
             soft_time_limit=180, time_limit=240)
def swarm_aggregate(_results, run_id: int, token: str) -> bool:
    """The swarm chord's callback: the aggregator, harness_swarm_complete, the fire's session ticked."""
    return swarm.aggregate(run_id=run_id, token=token)


@shared_task(name="fires.subtask_fire", acks_late=True, reject_on_worker_lost=True, **retries())
def subtask_fire(run_id: int, step: int, token: str) -> dict:
    """One parallel subtask of a plan: its child fire, made once and run (the fires queue)."""
    return subtask_fires.subtask_fire_run(run_id=run_id, step=step)


@shared_task(name="fires.subtasks_join", acks_late=True, reject_on_worker_lost=True, **retries(),
             soft_time_limit=60, time_limit=90)
def subtasks_join(_outcomes, run_id: int, token: str) -> bool:
    """The parallel subtasks' chord callback: their answers recorded, the parent fire's session ticked."""
    return subtask_fires.subtasks_join(run_id=run_id, token=token)


@shared_task(name="maintenance.quality_calibration", acks_late=True, ignore_result=True, **retries(max_retries=2),
             soft_time_limit=120, time_limit=180, expires=300)
def quality_calibration() -> int:
    """Run by beat every 5 minutes: rebuild each workspace's verifier calibration from its feedback."""
    return services.calibrations_rebuild()


RESEND_AFTER_SECONDS = 120  # a verifier group unanswered this long is sent again


@shared_task(name=schedules.RESEND_SWEEP_TASK, acks_late=True, ignore_result=True, **retries(max_retries=2),
             soft_time_limit=60, time_limit=90, expires=60)
def quality_resend_sweep() -> int:
    """Run by beat: send again the verifier groups and swarms a dead quality worker left unanswered."""
    return len(verification.runs_waiting_resend(older_than_seconds=RESEND_AFTER_SECONDS))
