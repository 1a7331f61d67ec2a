"""Tasks of proposals: thin, by id, on the `fires` queue (both start work for an agent)."""

from celery import shared_task
from django.conf import settings

from fathom.transient import retries
from proposals import helper_jobs, scheduled_routines


@shared_task(name=scheduled_routines.ROUTINE_TASK, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(max_retries=5), soft_time_limit=60, time_limit=90)
def routine_run(self, routine_id: int) -> None:
    """Sent by beat on a routine's schedule. The task id makes a redelivery record the same run."""
    scheduled_routines.routine_run_start(routine_id=routine_id, task_id=self.request.id)


# acks_late is safe: the job row is claimed with a conditional UPDATE, so a redelivery never runs
# the helper again, and a retry after a transient error only finishes what the first attempt recorded.
@shared_task(name=helper_jobs.HELPER_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True, **retries(),
             soft_time_limit=settings.FATHOM_HELPER_MAX_TIMEOUT + 60,
             time_limit=settings.FATHOM_HELPER_MAX_TIMEOUT + 120)
def helper_job_run(job_id: int) -> None:
    helper_jobs.helper_job_run(job_id=job_id)
