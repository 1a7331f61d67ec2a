"""The conductor's Celery tasks: thin, by id, calling services. Services enqueue them by name (a Celery
signature), so nothing the tasks call imports this module back."""

from celery import shared_task

from fathom.transient import retries
from harness.conductor import schedules
from harness.conductor import services as conductor
from harness.conductor.worker_port import WorkerBusy


@shared_task(name="fires.conductor_step", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries())
def conductor_step(run_id: str) -> str:
    """One conductor step of a run: dispatch every ready item, or make the one model call the state
    asks for (guarded by the run's row lock and claim, and by unique rows, so a redelivery is harmless)."""
    return conductor.run_step(run_id=run_id)


@shared_task(name="quality.conductor_call", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(WorkerBusy))
def conductor_call(call_id: str) -> str:
    """Carry out one capability call on its worker, then enqueue the run's next step (guarded by the
    call's claim; a redelivered call resumes from its fire's or its own journal). On the `quality` queue:
    a call mostly waits on a model or a command, so the thread-pool worker runs a step's ready items at
    once. Celery enforces no time limit on threads; each worker bounds itself (the terminal's timeout,
    the fire's turns and its model calls' deadline)."""
    return conductor.capability_call_run(call_id=call_id)


@shared_task(name=schedules.SWEEP_TASK, acks_late=True, ignore_result=True, **retries(max_retries=2),
             soft_time_limit=60, time_limit=90, expires=60)
def conductor_sweep() -> int:
    """Run by beat: enqueue again the conductor's lost calls and steps (their runner went silent)."""
    return len(conductor.runs_sweep())
