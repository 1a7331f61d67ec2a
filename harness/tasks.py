"""The harness's Celery tasks: thin, by id, calling services."""

from celery import shared_task

from harness.runtime import services as runtime


@shared_task(name="fires.session_tick", bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def session_tick(self, session_id: str) -> str:
    """Run at most one turn of the session (guarded by the session's database claim, so running
    twice or on two workers at once is harmless; a redelivered tick resumes the turn)."""
    return runtime.session_tick(session_id=session_id)


@shared_task(name="maintenance.harness_sweep", acks_late=True, ignore_result=True, soft_time_limit=60,
             time_limit=90, expires=60)
def harness_sweep() -> int:
    """Run by beat: tick sessions with work and no live runner (lost ticks, dead workers)."""
    return len(runtime.sessions_sweep())


@shared_task(name="fires.fire_run", bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def fire_run(self, fire_id: str) -> str:
    """Run or resume a fire not bound to a session turn (an asynchronous introspection). Guarded by
    the fire's claim; a redelivered task resumes from the fire's journal."""
    from harness.fires.services import fire_run as run

    return run(fire_id=fire_id).status


@shared_task(name="quality.fire_judge_axes", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             soft_time_limit=120, time_limit=180)
def fire_judge_axes(fire_id: str):
    """Judge a finished fire on five axes and write kind:judge-axes (once: guarded by the delta)."""
    from harness.fires.judge import fire_judge_axes as judge

    return judge(fire_id=fire_id)
