"""Autonomy's Celery tasks (the producers' among them): thin, by id, calling services."""

from celery import shared_task

from fathom.llm.errors import LLMConnectionError, LLMRateLimited, LLMServerError, LLMTimeout
from fathom.transient import retries
from harness.autonomy import dedup, services
from harness.autonomy.models import AutonomyMode, AutonomySettings
from harness.autonomy.producers import services as producers


@shared_task(name="maintenance.autonomy_sweep", ignore_result=True, **retries(max_retries=2),
             soft_time_limit=50, time_limit=60, expires=60)
def autonomy_sweep() -> dict:
    """Run by beat every minute: sample pressure, record decisions, claim and queue Sits. Not
    acks_late: a lost sweep is simply the next minute's."""
    return services.autonomy_sweep()


@shared_task(name="fires.autonomy_sit_start", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(), soft_time_limit=services.SIT_START_TIME_LIMIT - 60, time_limit=services.SIT_START_TIME_LIMIT)
def autonomy_sit_start(decision_id: int) -> str:
    """Start the Sit a sweep claimed: the focus pre-pass, then round 1 (once per decision: guarded by
    the claim's state under its row lock). A start that died is queued again by the sweep."""
    return str(services.autonomous_sit_start(decision_id=decision_id).trigger_id)


@shared_task(name="fires.autonomy_scheduled_sit", ignore_result=True, **retries(max_retries=2),
             soft_time_limit=50, time_limit=60)
def autonomy_scheduled_sit(workspace_id: int):
    """A workspace's cron Sit (its beat entry): decided and claimed like a pressure Sit, threshold aside."""
    decision = services.scheduled_sit(workspace_id=workspace_id)
    return decision.action if decision else "off"


@shared_task(name="maintenance.qa_marker_dedup", ignore_result=True, **retries(max_retries=2), soft_time_limit=300,
             time_limit=360, expires=3600)
def qa_marker_dedup() -> int:
    """Run by beat (hourly): fold Q/A markers asking the same question into a level-1 provenance
    through the gate. Harmless twice: a folded marker is wrapped, a pending fold is skipped."""
    return dedup.markers_dedup_all()


@shared_task(name="fires.producer_run", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(LLMTimeout, LLMConnectionError, LLMRateLimited, LLMServerError), soft_time_limit=300,
             time_limit=360)
def producer_run(run_id: int) -> str:
    """Run a queued producer run (claimed queued -> running, so a redelivery runs it once)."""
    return producers.producer_run(run_id=run_id).status


@shared_task(name="maintenance.producers_beat", ignore_result=True, **retries(max_retries=2), expires=3600)
def producers_beat() -> int:
    """Run by beat: a reflective run and a topical L2 pass in every workspace whose autonomy is on."""
    on = AutonomySettings.objects.filter(mode=AutonomyMode.ON).values_list("workspace_id", flat=True)
    return len(producers.producers_beat(workspace_ids=list(on)))
