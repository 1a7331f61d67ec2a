"""The fires' Celery tasks: thin, by id, calling services. Services enqueue them by name (a Celery
signature), so nothing the tasks call imports this module back."""

from celery import shared_task

from fathom.llm.errors import LLMConnectionError, LLMRateLimited, LLMServerError, LLMTimeout
from fathom.transient import retries
from harness.fires import judge, schedules
from harness.fires import services as fires
from harness.fires.tools import orient_shift
from harness.runtime import background
from harness.runtime import services as runtime


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


@shared_task(name=schedules.SWEEP_TASK, acks_late=True, ignore_result=True, **retries(max_retries=2),
             soft_time_limit=60, time_limit=90, expires=60)
def harness_sweep() -> int:
    """Run by beat: tick sessions with work and no live runner (lost ticks, dead workers), enqueue
    again the unfinished fires outside sessions whose runner died, and sweep background tasks (timed
    out, lost with their worker, waiting where capacity is free)."""
    swept = background.tasks_sweep()
    return (len(runtime.sessions_sweep()) + len(fires.fires_sweep()) + len(swept["timed_out"]) + len(swept["resent"])
            + swept["started"])


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
