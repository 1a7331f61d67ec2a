"""Festinger's background work: thin tasks, by id and plain JSON, calling the services.

maintenance.festinger_resolution    the resolution job (beat, or an operator's "run now")
memory.festinger_conflict_ask       the resolver model asked about one conflict (admin's "ask now")
memory.festinger_cues_insert        facts a cue pattern stated (source `inferred`, no threshold)
memory.festinger_concept_write      the write path for a concept that crossed the write threshold
memory.festinger_proxy_calls_finish the work after proxied calls' responses: every `after`, the trace
maintenance.festinger_counts_flush  beat, every 30 s: pushed encounter counts into PostgreSQL
"""

from celery import shared_task

from fathom import outbox
from fathom.errors import ApplicationError
from fathom.models import Workspace
from fathom.transient import retries
from festinger.cache import counts_flush
from festinger.models import Conflict, ResolutionRun
from festinger.proxy.calls import FINISH_TASK, proxied_calls_finish
from festinger.resolution import conflict_resolve_with_model, resolution_execute
from festinger.schedules import RESOLUTION_TASK
from festinger.services import insert_fact
from festinger.text import canonical
from festinger.writer import concept_write


def resolution_request(*, workspace, trigger: str) -> ResolutionRun:
    """Queue a run now (REST, admin, CLI, a full batch's continuation); the worker picks it up after
    commit."""
    run = ResolutionRun.objects.create(workspace=workspace, trigger=trigger)
    outbox.enqueue(RESOLUTION_TASK, kwargs={"run_id": run.pk})
    return run


def conflicts_ask_request(*, conflict_ids: list[int]) -> None:
    """Queue the resolver model for each of these conflicts (admin's "ask now"): a task a conflict,
    sent after commit, so a long selection never outgrows one task's time limit."""
    for conflict_id in conflict_ids:
        outbox.enqueue("memory.festinger_conflict_ask", kwargs={"conflict_id": conflict_id})


# acks_late is safe: a queued run is claimed with a conditional UPDATE, and each conflict is applied
# in a transaction that first checks it is still pending, so a redelivery repeats nothing.
@shared_task(name=RESOLUTION_TASK, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(max_retries=3), soft_time_limit=600, time_limit=660)
def resolution(self, workspace_id: int | None = None, run_id: int | None = None) -> None:
    """Drain a batch of the workspace's conflict queue: `workspace_id` from beat, `run_id` for a
    run an operator queued. A full batch queues the next run."""
    resolution_execute(workspace_id=workspace_id, run_id=run_id, task_id=self.request.id or "",
                       on_full_batch=resolution_request)


# acks_late is safe: a conflict decided already is skipped, and a decision is applied in a
# transaction that first checks the conflict is still pending.
@shared_task(name="memory.festinger_conflict_ask", acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             **retries(), soft_time_limit=300, time_limit=360)
def festinger_conflict_ask(conflict_id: int) -> str:
    """Ask the workspace's resolver model about one conflict now (admin's "Ask the resolver model now")."""
    return conflict_resolve_with_model(conflict_id=conflict_id)


@shared_task(name="memory.festinger_cues_insert", acks_late=True, reject_on_worker_lost=True, **retries(),
             soft_time_limit=60, time_limit=90)
def festinger_cues_insert(workspace_id: int, triples: list[dict]) -> list[dict]:
    """Place each triple through the collision check. Running twice is harmless: the same fact
    again only confirms its edge, or finds its conflict already queued."""
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return []
    outcomes = []
    for triple in triples:
        try:
            placed = insert_fact(workspace=workspace, concept=canonical(triple["concept"]),
                                 parent=canonical(triple["parent"]), dimension=canonical(triple["dimension"]),
                                 is_isa=bool(triple["is_isa"]), confidence=float(triple["confidence"]),
                                 source="inferred")
        except ApplicationError as exc:  # e.g. a concept that would be its own parent
            outcomes.append({**triple, "outcome": "invalid", "error": exc.message})
            continue
        outcomes.append({**triple, "outcome": "conflict" if isinstance(placed, Conflict) else "edge",
                         "id": placed.pk})
    return outcomes


@shared_task(name="memory.festinger_concept_write", acks_late=True, reject_on_worker_lost=True, **retries(),
             soft_time_limit=300, time_limit=360)
def festinger_concept_write(workspace_id: int, token: str, context: list[str] | None = None,
                            conversation: str | None = None) -> dict:
    """Ask the writer about one concept (guarded: one write per concept at a time, none once known, none
    past the conversation's or the workspace's hourly cap)."""
    return concept_write(workspace_id=workspace_id, token=token, context=context or (), conversation=conversation)


# No acks_late: the loop guard's record of an answer is not idempotent, so each call's work runs at most
# once (marked finished per call in Redis); a retry skips the calls it finished or began.
@shared_task(name=FINISH_TASK, ignore_result=True, **retries(), soft_time_limit=120, time_limit=150)
def festinger_proxy_calls_finish(outcomes: list[dict]) -> None:
    """Every model middleware's `after` and the trace of each proxied call (its outcome as JSON)."""
    proxied_calls_finish(outcomes=outcomes)


@shared_task(name="maintenance.festinger_counts_flush", acks_late=True, reject_on_worker_lost=True,
             ignore_result=True, **retries(max_retries=2), soft_time_limit=60, time_limit=90)
def festinger_counts_flush() -> dict:
    """Pushed encounter counts -> PostgreSQL (encounter_count + n), for every workspace."""
    return {str(workspace_id): n for workspace_id, n in counts_flush().items()}
