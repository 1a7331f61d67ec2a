"""Festinger's background work: the resolution job (beat, or an operator's "run now")."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from festinger.schedules import RESOLUTION_TASK

_TRANSIENT = (OperationalError, InterfaceError)


# acks_late is safe: a queued run is claimed with a conditional UPDATE, and each conflict is applied
# in a transaction that first checks it is still pending, so a redelivery repeats nothing.
@shared_task(name=RESOLUTION_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             autoretry_for=_TRANSIENT, retry_backoff=True, retry_jitter=True, max_retries=3,
             soft_time_limit=600, time_limit=660)
def resolution(workspace_id: int | None = None, run_id: int | None = None) -> None:
    """Drain a batch of the workspace's conflict queue: `workspace_id` from beat, `run_id` for a
    run an operator queued."""
    from festinger.resolution import resolution_execute

    resolution_execute(workspace_id=workspace_id, run_id=run_id)
