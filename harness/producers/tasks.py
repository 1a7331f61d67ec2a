"""The producers' Celery tasks (imported by harness.tasks, which Celery discovers)."""

from celery import shared_task

from fathom.llm.errors import LLMConnectionError, LLMRateLimited, LLMServerError, LLMTimeout
from fathom.transient import retries
from harness.autonomy.models import AutonomyMode, AutonomySettings
from harness.producers import services


@shared_task(name="fires.producer_run", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(LLMTimeout, LLMConnectionError, LLMRateLimited, LLMServerError), soft_time_limit=300,
             time_limit=360)
def producer_run(run_id: int) -> str:
    """Run a queued producer run (claimed queued -> running, so a redelivery runs it once)."""
    return services.producer_run(run_id=run_id).status


@shared_task(name="maintenance.producers_beat", ignore_result=True, **retries(max_retries=2), expires=3600)
def producers_beat() -> int:
    """Run by beat: a reflective run and a topical L2 pass in every workspace whose autonomy is on."""
    on = AutonomySettings.objects.filter(mode=AutonomyMode.ON).values_list("workspace_id", flat=True)
    return len(services.producers_beat(workspace_ids=list(on)))
