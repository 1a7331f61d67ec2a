"""The harness's Celery tasks: thin, by id, calling services. Services enqueue them by name (a
Celery signature), so nothing the tasks call imports this module back."""

from celery import shared_task

from fathom.llm.errors import LLMConnectionError, LLMRateLimited, LLMServerError, LLMTimeout
from fathom.transient import retries
from harness.autonomy import tasks as autonomy_tasks  # noqa: F401 - registers autonomy's tasks
from harness.conductor import services as conductor
from harness.conductor.worker_port import WorkerBusy
from harness.fires import judge
from harness.fires import services as fires
from harness.quality import flow as quality_flow
from harness.quality import tasks as quality_tasks  # noqa: F401 - registers the quality harness's tasks
from harness.runtime import background, schedules
from harness.runtime import services as runtime
from harness.tools import orient_shift


@shared_task(name="fires.session_tick", bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries())
def session_tick(self, session_id: str) -> str:
    """Run at most one turn of the session, a fire (guarded by the session's database claim, so
    running twice or on two workers at once is harmless; a redelivered tick resumes the turn)."""
    return runtime.session_tick(session_id=session_id, work=fires.fire_turn_work)


@shared_task(name="fires.fire_parked_resume", bind=True, acks_late=True, reject_on_worker_lost=True,
             ignore_result=True, **retries())
def fire_parked_resume(self, session_id: str, workspace_id: int, fire_id: str) -> str:
    """The session tick that carries a parked fire on once what it waited for has answered (sent by the
    quality worker's callbacks); as safe to run twice as any tick."""
    return fires.fire_parked_resume(session_id=session_id, workspace_id=workspace_id, fire_id=fire_id)


@shared_task(name=schedules.TICK_TASK, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(), soft_time_limit=60, time_limit=90)
def session_schedule_tick(self, schedule_id: str) -> None:
    """Sent by beat on a session's heartbeat or cron schedule: queue its trigger (once per message:
    the task id is the trigger's idempotency key, so a redelivery queues nothing twice)."""
    schedules.session_schedule_tick(schedule_id=schedule_id, task_id=self.request.id)


QUALITY_RESEND_AFTER_SECONDS = 120  # a verifier group unanswered this long is sent again


@shared_task(name="maintenance.harness_sweep", acks_late=True, ignore_result=True, **retries(max_retries=2),
             soft_time_limit=60, time_limit=90, expires=60)
def harness_sweep() -> int:
    """Run by beat: tick sessions with work and no live runner (lost ticks, dead workers), enqueue
    again the unfinished fires outside sessions whose runner died, sweep background tasks (timed
    out, lost with their worker, waiting where capacity is free), send again the verifier groups
    and swarms a dead quality worker left unanswered, and enqueue again the conductor's lost calls
    and steps."""
    swept = background.tasks_sweep()
    return (len(runtime.sessions_sweep()) + len(fires.fires_sweep()) + len(swept["timed_out"]) + len(swept["resent"])
            + swept["started"] + len(quality_flow.runs_waiting_resend(older_than_seconds=QUALITY_RESEND_AFTER_SECONDS))
            + len(conductor.runs_sweep()))


@shared_task(name="fires.task_run", acks_late=True, reject_on_worker_lost=True, ignore_result=True, **retries())
def task_run(task_id: str) -> str:
    """Run a background task (fs_read, ...) that took its capacity. Guarded by the task's claim and
    state, so a redelivery after a dead worker runs it again as a counted attempt, never twice at
    once; its time limit comes with the message (the task's own timeout)."""
    return background.task_execute(task_id=task_id)


@shared_task(name="fires.fire_run", bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries())
def fire_run(self, fire_id: str) -> str:
    """Run or resume a fire not bound to a session turn (an asynchronous introspection). Guarded by
    the fire's claim; a redelivered task resumes from the fire's journal."""
    return fires.fire_run(fire_id=fire_id).status


@shared_task(name="quality.fire_judge_axes", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(), soft_time_limit=120, time_limit=180)
def fire_judge_axes(fire_id: str):
    """Judge a finished fire on five axes and write kind:judge-axes (once: guarded by the delta)."""
    return judge.fire_judge_axes(fire_id=fire_id)


@shared_task(name="memory.orient_regenerate", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(LLMTimeout, LLMConnectionError, LLMRateLimited, LLMServerError, max_retries=4),
             soft_time_limit=120, time_limit=180)
def orient_regenerate(fire_id: str, key: str, reason: str):
    """Regenerate the orient for the orient_shift call `key` of a fire: one kind:orient delta per key
    (guarded by its idempotent write, so a redelivery writes nothing twice)."""
    return orient_shift.orient_regenerate(fire_id=fire_id, key=key, reason=reason)


# --- the conductor (harness.conductor) ----------------------------------------------------------------------

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
