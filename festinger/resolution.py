"""The resolution job (seed 002, "Nightly resolution job", T27-T32): drain the conflict queue,
priority first, asking the `resolver` role for a JSON decision per conflict and applying it:

- decompose (ISA+ISA): two more specific dimensions become concepts with roots; the existing edge
  moves to the first (kept in EdgeHistory as it was), the incoming fact goes into the second;
- update: the existing edge goes to EdgeHistory and the incoming fact takes its place;
- dismiss: the world model stands;
- misclassification (ISA+ISPART): the incoming fact goes into the suggested dimension.

Each conflict is applied in its own transaction: a failed call or a malformed or inapplicable answer
leaves the conflict pending with the error recorded, never half applied. Operators apply decisions
of their own through the same `conflict_apply`.
"""

import json
import logging
import re
from collections.abc import Callable
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from redis.exceptions import LockNotOwnedError

from fathom.errors import ApplicationError, ConflictError
from fathom.llm import Message, complete, registry
from fathom.models import Workspace
from fathom.redis_client import get_redis
from fathom.transient import TRANSIENT_ERRORS
from festinger.bootstrap import dimension_ensure
from festinger.models import CollisionType, Concept, Conflict, ConflictStatus, Edge, ResolutionRun, Source
from festinger.services import edge_move, edge_remove, place, token_normalise, world_ensure, writes_committed

logger = logging.getLogger(__name__)

DECISIONS = ("decompose", "update", "dismiss", "misclassification")
# Conflicts per run; a full batch that resolved something continues in a new run.
RESOLUTION_BATCH = 10
LOCK_SECONDS = 900  # longer than the task's hard time limit: a run older than this has no live worker
LOST_RUN_ERROR = "worker lost: run did not finish"

DECISION_SCHEMA = {"type": "json_schema", "json_schema": {"name": "festinger_resolution", "schema": {
    "type": "object", "additionalProperties": False, "required": ["decision", "reasoning"],
    "properties": {
        "decision": {"type": "string", "enum": list(DECISIONS)},
        "existing_dimension": {"type": "string", "description": "decompose: where the existing fact stays valid"},
        "new_dimension": {"type": "string", "description": "decompose: where the incoming fact is valid"},
        "dimension": {"type": "string", "description": "misclassification: the right dimension of the incoming fact"},
        "reasoning": {"type": "string"},
    }}}}

_CHOICES = {
    CollisionType.ISA_ISA: (
        "Both facts say what kind of thing the concept is, in the same dimension. If both are true at once "
        "the dimension is too coarse: answer decompose with two more specific dimension names, "
        "existing_dimension (where the existing fact stays valid) and new_dimension (where the incoming fact "
        "is valid). If the incoming fact is noise or wrong, answer dismiss. If the incoming fact replaces the "
        "existing one, answer update."),
    CollisionType.ISPART_ISPART: (
        "The facts contradict each other: a thing is in one place per dimension. If the incoming fact is more "
        "current or correct, answer update (the existing fact is retired). If the existing fact is still "
        "correct, answer dismiss."),
    CollisionType.MISCLASSIFICATION: (
        "One fact is a classification (ISA) and the other a membership (ISPART) in the same dimension: one of "
        "them is in the wrong dimension. Answer misclassification with `dimension`, the dimension the incoming "
        "fact belongs in, or dismiss if the incoming fact is wrong."),
    CollisionType.CYCLE: (
        "The incoming parent already descends from the concept in this dimension: storing the fact would make "
        "the concept its own ancestor. Answer dismiss (an operator may remove an edge of the chain and state "
        "the fact again)."),
}


def allowed_decisions(collision_type: str) -> tuple[str, ...]:
    if collision_type == CollisionType.CYCLE:
        return ("dismiss",)  # update would place the very edge that closes the cycle
    extra = {CollisionType.ISA_ISA: ("decompose",), CollisionType.MISCLASSIFICATION: ("misclassification",)}
    return (*extra.get(collision_type, ()), "update", "dismiss")


# --- The job ------------------------------------------------------------------------------------


def resolution_execute(*, workspace_id: int | None = None, run_id: int | None = None, task_id: str = "",
                       limit: int = RESOLUTION_BATCH,
                       on_full_batch: Callable[..., object] | None = None) -> ResolutionRun | None:
    """Run the job for a queued run (`run_id`) or a scheduled tick (`workspace_id`, its Celery
    `task_id`; a claimed run records it). A run delivered again while `running` by the task that claimed
    it (its worker died: the broker redelivers a task only once its worker is gone; or a retry) is
    carried on where it stopped: the conflicts it decided are no longer pending. Anyone else finding it
    `running` gets it back untouched. A second run of the same workspace while one is in progress is recorded as
    skipped. Runs left `running` by a worker that died and never delivered again are failed first
    (see `_lost_runs_fail`). A full batch that resolved something, with more conflicts waiting, calls
    `on_full_batch(workspace=, trigger=)` (the task queues the next run: festinger.tasks.resolution_request)."""
    if run_id is not None:
        claimed = ResolutionRun.objects.filter(pk=run_id, status=ResolutionRun.Status.QUEUED).update(
            status=ResolutionRun.Status.RUNNING, started_at=timezone.now(), task_id=task_id)
        run = ResolutionRun.objects.select_related("workspace").filter(pk=run_id).first()
    else:
        workspace = Workspace.objects.filter(pk=workspace_id).first()
        if workspace is None:
            return None
        run = ResolutionRun.objects.select_related("workspace").filter(task_id=task_id).first() if task_id else None
        claimed = run is None
        if claimed:
            run = ResolutionRun.objects.create(workspace=workspace, trigger="schedule", task_id=task_id,
                                               status=ResolutionRun.Status.RUNNING, started_at=timezone.now())
    # Only the task that claimed a run carries it on when delivered again: any other caller finding it
    # `running` (the worker and an in-process call racing for one queued run) leaves it to its attempt.
    if not claimed and (run is None or run.status != ResolutionRun.Status.RUNNING or not task_id
                        or run.task_id != task_id):
        return run
    carried_on = not claimed
    lock = _WorkspaceLock(run.workspace_id, run.pk)
    if not (lock.take_over() if carried_on else lock.acquire()):
        _finish(run, status=ResolutionRun.Status.SKIPPED, error="another resolution run of this workspace is in progress")
        return run
    try:
        _lost_runs_fail(run)
        _drain(run, limit=limit, on_full_batch=on_full_batch)
    except TRANSIENT_ERRORS:  # the task retries; its redelivery carries this run on (task_id above)
        raise
    except Exception as exc:  # the run row says why; conflicts not reached stay pending
        logger.exception("festinger resolution run %s failed", run.pk)
        _finish(run, status=ResolutionRun.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
    finally:
        lock.release()
    return run


def _drain(run: ResolutionRun, *, limit: int, on_full_batch: Callable[..., object] | None) -> None:
    config = world_ensure(workspace=run.workspace)
    model = registry.resolve(workspace=run.workspace, role=config.resolver_role)
    if model.provider == registry.OFFLINE_MODEL.provider:
        _finish(run, status=ResolutionRun.Status.FINISHED,
                error=f"no model answers the {config.resolver_role!r} role in this workspace: the queue waits")
        return
    # Priority first, then conflicts that failed less often, oldest first.
    batch = list(Conflict.objects.filter(workspace=run.workspace, status=ConflictStatus.PENDING)
                 .order_by("-priority", "attempts", "created_at", "id").values_list("pk", flat=True)[:limit])
    for conflict_id in batch:
        outcome = conflict_resolve_with_model(conflict_id=conflict_id, role=config.resolver_role)
        run.processed += 1
        if outcome == ConflictStatus.RESOLVED:
            run.resolved += 1
        elif outcome == ConflictStatus.DISMISSED:
            run.dismissed += 1
        elif outcome == "failed":
            run.failed += 1
        run.save(update_fields=["processed", "resolved", "dismissed", "failed"])
    _finish(run, status=ResolutionRun.Status.FINISHED)
    more = Conflict.objects.filter(workspace=run.workspace, status=ConflictStatus.PENDING).exclude(pk__in=batch)
    if on_full_batch is not None and len(batch) == limit and run.resolved + run.dismissed and more.exists():
        on_full_batch(workspace=run.workspace, trigger=f"continuation of run #{run.pk}")


def _lost_runs_fail(run: ResolutionRun) -> int:
    """Fail the workspace's runs still `running` after LOCK_SECONDS: the task's hard time limit is
    shorter, so their worker died and their lock has expired. Called holding the lock."""
    now = timezone.now()
    return ResolutionRun.objects.filter(
        workspace_id=run.workspace_id, status=ResolutionRun.Status.RUNNING,
        started_at__lt=now - timedelta(seconds=LOCK_SECONDS),
    ).exclude(pk=run.pk).update(status=ResolutionRun.Status.FAILED, error=LOST_RUN_ERROR, finished_at=now)


def _finish(run: ResolutionRun, *, status: str, error: str = "") -> None:
    run.status, run.error, run.finished_at = status, error, timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])


class _WorkspaceLock:
    """One resolution run per workspace at a time, across processes: redis-py's lock (an expiring
    key, released atomically and only by its holder) whose token names the run holding it."""

    def __init__(self, workspace_id: int, run_id: int):
        self.lock = get_redis().lock(f"festinger:resolution:lock:{workspace_id}", timeout=LOCK_SECONDS)
        self.token = f"run:{run_id}"

    def acquire(self) -> bool:
        return self.lock.acquire(blocking=False, token=self.token)

    def take_over(self) -> bool:
        """Acquire the lock if it is free or still held by an earlier attempt of the same run (its
        worker died; the token is the run's), restarting its expiry."""
        if self.acquire():
            return True
        self.lock.local.token = self.token.encode()
        try:
            return self.lock.reacquire()
        except LockNotOwnedError:
            self.lock.local.token = None
            return False

    def release(self) -> None:
        try:
            self.lock.release()
        except LockNotOwnedError:
            pass  # it expired (the run outlived LOCK_SECONDS) and may be another run's now: not ours to free


# --- One conflict -------------------------------------------------------------------------------


def conflict_resolve_with_model(*, conflict_id: int, role: str | None = None) -> str:
    """Ask the model (`role`, by default the workspace's configured resolver role) about one pending
    conflict and apply its decision. Returns the conflict's new status, or "failed" (the error
    recorded on the conflict, which stays pending), or "skipped" when it was no longer pending."""
    conflict = Conflict.objects.select_related(*_RELATED).filter(pk=conflict_id).first()
    if conflict is None or conflict.status != ConflictStatus.PENDING:
        return "skipped"
    role = role or world_ensure(workspace=conflict.workspace).resolver_role
    try:
        completion = complete(workspace=conflict.workspace_id, role=role, response_format=DECISION_SCHEMA,
                              messages=[Message.system(RESOLVER_SYSTEM), Message.user(conflict_prompt(conflict))])
        decision = decision_read(completion.text)
        conflict = conflict_apply(conflict_id=conflict.pk, decision=decision, actor="festinger")
    except ConflictError:
        return "skipped"
    except (SoftTimeLimitExceeded, *TRANSIENT_ERRORS):  # the run's business (fail, or retry), not this conflict's
        raise
    except Exception as exc:  # any failure leaves the conflict pending; the next run tries again
        if not isinstance(exc, ApplicationError):
            logger.exception("festinger: resolving conflict %s failed", conflict_id)
        message = exc.message if isinstance(exc, ApplicationError) else f"{type(exc).__name__}: {exc}"
        Conflict.objects.filter(pk=conflict_id, status=ConflictStatus.PENDING).update(
            error=message[:2000], attempts=F("attempts") + 1)
        return "failed"
    return conflict.status


def decision_read(text: str) -> dict:
    """The JSON object in a model's answer (a ```json fence is tolerated), or ApplicationError."""
    body = (text or "").strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1)
    try:
        decision = json.loads(body)
    except ValueError:
        raise ApplicationError(f"the resolver's answer is not JSON: {body[:200]!r}", code="invalid_decision") from None
    if not isinstance(decision, dict):
        raise ApplicationError("the resolver's answer is not a JSON object", code="invalid_decision")
    return decision


_RELATED = ("workspace", "concept", "dimension", "existing_parent", "incoming_parent")


def conflict_apply(*, conflict_id: int, decision: dict, actor: str) -> Conflict:
    """Apply a decision ({"decision": "decompose" | "update" | "dismiss" | "misclassification", ...})
    to a pending conflict in one transaction, recording the decision, what was done, who and when.
    ApplicationError (nothing changed) when the decision is malformed, not allowed for this collision
    type, or cannot be applied to the graph as it now is; ConflictError when it is not pending."""
    with transaction.atomic():
        conflict = Conflict.objects.select_for_update(of=("self",)).select_related(*_RELATED).get(pk=conflict_id)
        if conflict.status != ConflictStatus.PENDING:
            raise ConflictError(f"conflict #{conflict.pk} is {conflict.status} already", code="conflict_not_pending")
        decision = decision_validate(conflict, decision)
        applied = _APPLY[decision["decision"]](conflict, decision, actor)
        conflict.status = (ConflictStatus.DISMISSED if decision["decision"] == "dismiss"
                           else ConflictStatus.RESOLVED)
        conflict.resolution = {"decision": decision, "applied": applied, "by": actor}
        conflict.resolved_at, conflict.resolved_by, conflict.error = timezone.now(), actor, ""
        conflict.save(update_fields=["status", "resolution", "resolved_at", "resolved_by", "error"])
        writes_committed(conflict.workspace_id)
    return conflict


def conflict_dismiss(*, conflict_id: int, actor: str, reason: str = "") -> Conflict:
    """An operator's dismissal: the world model stands."""
    return conflict_apply(conflict_id=conflict_id, decision={"decision": "dismiss", "reasoning": reason}, actor=actor)


def decision_validate(conflict: Conflict, decision: dict) -> dict:
    """The decision with its dimension names normalised, or ApplicationError saying what is wrong."""
    kind = decision.get("decision")
    allowed = allowed_decisions(conflict.collision_type)
    if kind not in allowed:
        raise ApplicationError(
            f"decision {kind!r} does not apply to a {conflict.collision_type} conflict; use one of {', '.join(allowed)}",
            code="invalid_decision")
    clean = {"decision": kind, "reasoning": str(decision.get("reasoning") or "")[:2000]}
    needed = {"decompose": ("existing_dimension", "new_dimension"), "misclassification": ("dimension",)}
    for name in needed.get(kind, ()):
        value = decision.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ApplicationError(f"a {kind} decision needs {name!r} (a dimension name)", code="invalid_decision")
        clean[name] = token_normalise(value)
        if clean[name] == conflict.concept.token:
            raise ApplicationError(f"{name} cannot be the concept itself", code="invalid_decision")
    if kind == "decompose":
        if clean["existing_dimension"] == clean["new_dimension"]:
            raise ApplicationError("decompose needs two different dimensions", code="invalid_decision")
        if clean["new_dimension"] == conflict.dimension.token:
            raise ApplicationError(f"new_dimension must differ from {conflict.dimension.token!r}, where the facts "
                                   "collide", code="invalid_decision")
    if kind == "misclassification" and clean["dimension"] == conflict.dimension.token:
        raise ApplicationError(f"dimension must differ from {conflict.dimension.token!r}, where the facts collide",
                               code="invalid_decision")
    return clean


def _current_edge(conflict: Conflict) -> Edge | None:
    """The edge now holding (concept, dimension): the conflict's existing edge, or None when it is
    gone. An edge with another parent means the graph moved on since the conflict was queued."""
    edge = Edge.objects.select_for_update().filter(concept=conflict.concept, dimension=conflict.dimension).first()
    if edge is not None and edge.parent_id != conflict.existing_parent_id:
        raise ApplicationError(
            f"{conflict.concept} now has {edge.parent} in [{conflict.dimension}], not {conflict.existing_parent}: "
            "the conflict is out of date; dismiss it or decide again", code="conflict_stale")
    return edge


def _place_incoming(conflict: Conflict, dimension: Concept) -> Edge:
    placed = place(concept=conflict.concept, parent=conflict.incoming_parent, dimension=dimension,
                   is_isa=conflict.incoming_is_isa, confidence=conflict.incoming_confidence, source=Source.FESTINGER)
    if isinstance(placed, Conflict) and placed.collision_type == CollisionType.CYCLE:
        raise ApplicationError(f"{conflict.incoming_parent} descends from {conflict.concept} in [{dimension}]: "
                               "the fact would close a cycle", code="cycle")
    if not isinstance(placed, Edge):
        raise ApplicationError(f"{conflict.concept} already has another parent in [{dimension}]",
                               code="dimension_taken")
    return placed


def _edge_ref(edge: Edge) -> dict:
    return {"id": edge.pk, "concept": edge.concept.token, "parent": edge.parent.token,
            "dimension": edge.dimension.token, "is_isa": edge.is_isa}


def _apply_dismiss(conflict, decision, actor) -> dict:
    return {}


def _apply_update(conflict, decision, actor) -> dict:
    current = _current_edge(conflict)
    applied = {}
    if current is not None:
        history = edge_remove(edge=current, reason=f"replaced by conflict #{conflict.pk} (update)", actor=actor,
                              conflict=conflict)
        applied["retired"] = {"history_id": history.pk}
    applied["inserted"] = _edge_ref(_place_incoming(conflict, conflict.dimension))
    return applied


def _apply_decompose(conflict, decision, actor) -> dict:
    existing_dimension = dimension_ensure(workspace=conflict.workspace, token=decision["existing_dimension"],
                                          is_isa=conflict.existing_is_isa)
    new_dimension = dimension_ensure(workspace=conflict.workspace, token=decision["new_dimension"],
                                     is_isa=conflict.incoming_is_isa)
    applied = {"dimensions": [existing_dimension.token, new_dimension.token]}
    current = _current_edge(conflict)
    if current is not None and existing_dimension.pk != conflict.dimension_id:
        moved = edge_move(edge=current, dimension=existing_dimension, actor=actor, conflict=conflict,
                          reason=f"[{conflict.dimension}] decomposed by conflict #{conflict.pk}")
        applied["moved"] = _edge_ref(moved)
    applied["inserted"] = _edge_ref(_place_incoming(conflict, new_dimension))
    return applied


def _apply_misclassification(conflict, decision, actor) -> dict:
    dimension = dimension_ensure(workspace=conflict.workspace, token=decision["dimension"],
                                 is_isa=conflict.incoming_is_isa)
    return {"inserted": _edge_ref(_place_incoming(conflict, dimension))}


_APPLY = {"dismiss": _apply_dismiss, "update": _apply_update, "decompose": _apply_decompose,
          "misclassification": _apply_misclassification}


# --- The prompt ---------------------------------------------------------------------------------

RESOLVER_SYSTEM = (
    "You keep a world model coherent. It is a graph of facts 'concept IN parent within a dimension'; ISA facts "
    "say what kind of thing a concept is, ISPART facts say what it belongs to. A concept has one parent per "
    "dimension, so a second fact in the same dimension was refused and queued for you. Decide what to do and "
    "answer with one JSON object only: {\"decision\": ..., \"reasoning\": ...} plus the fields the decision "
    "needs. Prefer dimension names from the known taxonomy; invent a new name (lowercase, words joined with -) "
    "only when nothing fits.")


def conflict_prompt(conflict: Conflict) -> str:
    concept, dimension = conflict.concept.token, conflict.dimension.token

    def fact(parent, is_isa):
        return f"{concept} {'ISA' if is_isa else 'ISPART'} {parent} (dimension {dimension})"

    taxonomy = sorted(Concept.objects.filter(
        workspace_id=conflict.workspace_id, edges__parent_id=F("id"), edges__dimension_id=F("id"))
        .values_list("token", flat=True).distinct())
    return "\n".join([
        f"Existing fact: {fact(conflict.existing_parent.token, conflict.existing_is_isa)}",
        f"Incoming fact: {fact(conflict.incoming_parent.token, conflict.incoming_is_isa)} "
        f"(confidence {conflict.incoming_confidence:.2f}, source {conflict.incoming_source})",
        f"Collision type: {conflict.collision_type}. {_CHOICES[conflict.collision_type]}",
        f"Allowed decisions: {', '.join(allowed_decisions(conflict.collision_type))}.",
        f"Known dimensions: {', '.join(taxonomy)}.",
        'Example: {"decision": "decompose", "existing_dimension": "artifact-type", '
        '"new_dimension": "deployment-type", "reasoning": "..."}',
    ])


