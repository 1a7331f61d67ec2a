"""Platform tasks: beat's heartbeat, trace retention, the outbox's relay, and a ping per queue that proves a worker consumes it."""

from celery import current_task, shared_task
from django.utils import timezone

from fathom import outbox
from fathom.redis_client import get_redis
from fathom.schedules import OUTBOX_RELAY_TASK
from fathom.tracing import services as tracing_services
from fathom.transient import retries

BEAT_LAST_TICK_KEY = "fathom:beat:last_tick"


@shared_task(name="maintenance.heartbeat", acks_late=True, ignore_result=True, **retries(max_retries=2),
             soft_time_limit=10, time_limit=20)
def heartbeat() -> str:
    """Run by beat every few seconds; /v1/health reads the time it last ran."""
    now = timezone.now().isoformat()
    get_redis().set(BEAT_LAST_TICK_KEY, now)
    return now


@shared_task(name="maintenance.traces_prune", acks_late=True, **retries())
def traces_prune(retention_days: int | None = None, batch_size: int | None = None) -> dict:
    """Run by beat every hour. Deleting what is already gone deletes nothing, so a rerun is harmless."""
    return tracing_services.traces_prune(retention_days=retention_days, batch_size=batch_size)


@shared_task(name="platform.ping", acks_late=True, **retries(max_retries=2), soft_time_limit=10, time_limit=20)
def ping(token: str) -> dict:
    """Echo; routed to any queue by the caller, it shows which worker consumed which queue."""
    return {"token": token, "queue": current_task.request.delivery_info.get("routing_key"),
            "worker": current_task.request.hostname}


@shared_task(name=OUTBOX_RELAY_TASK, acks_late=True, ignore_result=True, **retries(max_retries=1),
             soft_time_limit=30, time_limit=60)
def outbox_relay() -> int:
    """Run by beat every few seconds: publish the sends the broker refused (fathom.outbox)."""
    return outbox.relay()
