"""The runtime's Celery tasks: thin, by id, calling services. Services enqueue them by name (a Celery
signature), so nothing the tasks call imports this module back."""

from celery import shared_task

from fathom.transient import retries
from harness.runtime import background, schedules


@shared_task(name=schedules.TICK_TASK, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(), soft_time_limit=60, time_limit=90)
def session_schedule_tick(self, schedule_id: str) -> None:
    """Sent by beat on a session's heartbeat or cron schedule: queue its trigger (once per message:
    the task id is the trigger's idempotency key, so a redelivery queues nothing twice)."""
    schedules.session_schedule_tick(schedule_id=schedule_id, task_id=self.request.id)


@shared_task(name="fires.task_run", acks_late=True, reject_on_worker_lost=True, ignore_result=True, **retries())
def task_run(task_id: str) -> str:
    """Run a background task (fs_read, ...) that took its capacity. Guarded by the task's claim and
    state, so a redelivery after a dead worker runs it again as a counted attempt, never twice at
    once; its time limit comes with the message (the task's own timeout)."""
    return background.task_execute(task_id=task_id)
