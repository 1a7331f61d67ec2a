"""Festinger's state changes: the world's configuration, concepts, and facts placed in the graph
through the collision check. Views, tasks, admin, the CLI and the write path all call these."""

import re

from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Value
from django.db.models.functions import Greatest
from django.utils import timezone
from psycopg import errors as psycopg_errors

from fathom.cron import cron_parse
from fathom.errors import ApplicationError
from festinger import cache
from festinger.bootstrap import bootstrap_workspace, dimension_ensure, root_ensure  # noqa: F401 (part of the services)
from festinger.models import (
    TOKEN_MAX_LENGTH,
    CollisionType,
    Concept,
    Conflict,
    ConflictStatus,
    Edge,
    EdgeHistory,
    Source,
    WorldConfig,
)
from festinger.schedules import resolution_schedule_sync
from festinger.text import canonical

# --- The workspace's world ----------------------------------------------------------------------


def world_ensure(*, workspace) -> WorldConfig:
    """The workspace's configuration, creating it on first use together with the bootstrap (seed
    dimensions, dictionary) and the resolution job's beat entry. One query when all exists."""
    config = WorldConfig.objects.filter(workspace=workspace).first()
    if config is not None:
        return config
    with transaction.atomic():
        bootstrap_workspace(workspace=workspace)
        config, created = WorldConfig.objects.get_or_create(workspace=workspace)
        if created:
            resolution_schedule_sync(config=config)
            writes_committed(workspace.pk)  # a dormant cache wakes up
    return config


CONFIG_FIELDS = (
    "saliency_read_threshold", "saliency_write_threshold", "recollection_confidence_floor",
    "recollection_recency_days", "recollection_max_concepts", "resolution_schedule", "resolution_enabled",
    "writer_role", "resolver_role", "writer_max_calls", "writer_calls_per_conversation", "writer_calls_per_hour",
    "saliency_half_life_days",
)


@transaction.atomic
def config_update(*, config: WorldConfig, **changes) -> WorldConfig:
    """Validate and save the configuration; the resolution job's crontab follows `resolution_schedule`."""
    unknown = set(changes) - set(CONFIG_FIELDS)
    if unknown:
        raise ApplicationError(f"unknown configuration fields: {', '.join(sorted(unknown))}", code="invalid_config")
    for name, value in changes.items():
        setattr(config, name, value)
    config_validate(config)
    config.save()
    resolution_schedule_sync(config=config)
    writes_committed(config.workspace_id)  # every process reloads the thresholds
    return config


_ROLE = re.compile(r"^[a-z][a-z0-9_-]{0,47}$")


def config_validate(config: WorldConfig) -> None:
    """ApplicationError naming the first invalid setting."""
    try:
        config.resolution_schedule = str(cron_parse(config.resolution_schedule))
    except ApplicationError as exc:
        raise ApplicationError(f"resolution_schedule: {exc.message}", code="invalid_config",
                               details={"field": "resolution_schedule"}) from None
    for name in ("saliency_read_threshold", "saliency_write_threshold"):
        if getattr(config, name) < 0:
            raise ApplicationError(f"{name} must be 0 or more", code="invalid_config")
    if config.saliency_write_threshold < config.saliency_read_threshold:
        raise ApplicationError("saliency_write_threshold must not be below saliency_read_threshold",
                               code="invalid_config")
    if not config.saliency_half_life_days > 0:
        raise ApplicationError("saliency_half_life_days must be above 0", code="invalid_config")
    if not 0.0 <= config.recollection_confidence_floor <= 1.0:
        raise ApplicationError("recollection_confidence_floor must be between 0 and 1", code="invalid_config")
    for name in ("writer_role", "resolver_role"):
        if not _ROLE.match(getattr(config, name) or ""):
            raise ApplicationError(f"{name} must be a lowercase role name such as 'writer'", code="invalid_config")


# --- Concepts (SOAS) ----------------------------------------------------------------------------

def token_normalise(text: str) -> str:
    """A phrase as the one token the tokeniser reads for it (festinger.text.canonical: lowercase,
    punctuation dropped, words joined with underscores; 'Glitch University' -> 'glitch_university'),
    so a fact is found again in the prompts that mention it."""
    token = canonical(str(text))
    if not token:
        raise ApplicationError(f"{text!r} is not a token: it is empty once punctuation is stripped",
                               code="invalid_token")
    if len(token) > TOKEN_MAX_LENGTH:
        raise ApplicationError(f"token {token[:40]!r}... is longer than {TOKEN_MAX_LENGTH} characters",
                               code="invalid_token")
    return token


def concepts_ensure(*, workspace, tokens) -> dict[str, Concept]:
    """token -> Concept for every (already normalised) token, inserting the new ones. Ids always
    come from PostgreSQL; concurrent callers inserting the same token get the same row."""
    tokens = sorted(set(tokens))
    found = {c.token: c for c in Concept.objects.filter(workspace=workspace, token__in=tokens)}
    missing = [token for token in tokens if token not in found]
    if missing:
        Concept.objects.bulk_create([Concept(workspace=workspace, token=token) for token in missing],
                                    ignore_conflicts=True)
        found.update((c.token, c) for c in Concept.objects.filter(workspace=workspace, token__in=missing))
    return found


# --- Facts into the graph (URD) -----------------------------------------------------------------


def insert_fact(*, workspace, concept: str, parent: str, dimension: str, is_isa: bool, confidence: float,
                source: str, priority: bool = False) -> Edge | Conflict:
    """Place "concept IN parent within dimension" (the seed's URD insert flow).

    Returns the new Edge; the existing Edge when the same fact is already held (its last_confirmed
    moves to now and it keeps the higher confidence); or, when the concept already has another
    parent in that dimension, the pending Conflict the fact was queued as (classified isa_isa,
    ispart_ispart or misclassification by both facts' is_isa); or, when the parent descends from the
    concept in that dimension (the edge would close a cycle), a pending `cycle` Conflict. The database's unique index is the
    safety net: a concurrent insert into the same (concept, dimension) becomes a Conflict, never an
    error. New tokens become concepts; the dimension gets its root edge. `priority` marks a manual
    fact, reviewed first by the resolution job."""
    concept_token, parent_token, dimension_token = (token_normalise(t) for t in (concept, parent, dimension))
    if not 0.0 <= confidence <= 1.0:
        raise ApplicationError(f"confidence must be between 0 and 1, not {confidence}", code="invalid_fact")
    if source not in Source.values:
        raise ApplicationError(f"source must be one of {', '.join(Source.values)}", code="invalid_fact")
    if concept_token == parent_token:
        raise ApplicationError(f"{concept_token!r} cannot be its own parent", code="invalid_fact")
    if concept_token == dimension_token:
        raise ApplicationError(f"{concept_token!r} cannot be placed in its own dimension", code="invalid_fact")
    world_ensure(workspace=workspace)
    for attempt in range(DEADLOCK_RETRIES):
        try:
            with transaction.atomic():
                # All three tokens in one sorted insert: concurrent writers lock new rows in one order.
                concepts = concepts_ensure(workspace=workspace, tokens=[concept_token, parent_token, dimension_token])
                dimension = concepts[dimension_token]
                root_ensure(dimension=dimension, is_isa=is_isa)
                result = place(concept=concepts[concept_token], parent=concepts[parent_token], dimension=dimension,
                               is_isa=is_isa, confidence=confidence, source=source, priority=priority)
            break
        except OperationalError as exc:
            # A writer that creates concepts in another order (a bootstrap, a batch) can deadlock with
            # us; PostgreSQL aborts one side, which retries. Inside a caller's transaction we cannot.
            if not _is_deadlock(exc) or attempt == DEADLOCK_RETRIES - 1 or transaction.get_connection().in_atomic_block:
                raise
    writes_committed(workspace.pk)
    return result


DEADLOCK_RETRIES = 3


def _is_deadlock(exc: OperationalError) -> bool:
    return isinstance(exc.__cause__, psycopg_errors.DeadlockDetected)


def place(*, concept: Concept, parent: Concept, dimension: Concept, is_isa: bool, confidence: float,
          source: str, priority: bool = False) -> Edge | Conflict:
    """`insert_fact` on concepts that exist, inside the caller's transaction (the resolution job
    places facts with it too)."""
    # In memory first: when this process's world holds an edge in the slot, the fact is a confirmation
    # or a collision, and the edge is read without trying the insert. The database is the safety net:
    # an insert that does nothing when the unique index (concept, dimension) or (concept, parent,
    # dimension) holds a row already, committed or about to be (it waits for that writer). A stale
    # cache costs a retry, never a wrong answer: what the database holds decides.
    held = cache.held(concept.workspace_id)
    occupied = held is not None and (concept.pk, dimension.pk) in held.urd_by_concept_dim
    for attempt in range(5):
        now = timezone.now()
        if attempt or not occupied:
            if _closes_cycle(concept=concept, parent=parent, dimension=dimension):
                return _queue_cycle(concept=concept, parent=parent, dimension=dimension, is_isa=is_isa,
                                    confidence=confidence, source=source, priority=priority)
            with connection.cursor() as cursor:
                cursor.execute(_EDGE_INSERT, [concept.workspace_id, now, concept.pk, parent.pk, dimension.pk, is_isa,
                                              confidence, now, source])
                inserted = cursor.fetchone()
            if inserted is not None:
                return Edge(pk=inserted[0], workspace_id=concept.workspace_id, created_at=now, concept=concept,
                            parent=parent, dimension=dimension, is_isa=is_isa, confidence=confidence,
                            last_confirmed=now, source=source)
        existing = Edge.objects.filter(concept=concept, dimension=dimension).first()
        if existing is None:
            continue  # the row in the way was removed since (a resolution): try again
        if existing.parent_id == parent.pk and existing.is_isa == is_isa:
            confirmed = Edge.objects.filter(pk=existing.pk, parent=parent, is_isa=is_isa).update(
                last_confirmed=now, confidence=Greatest("confidence", Value(confidence)))
            if confirmed:
                existing.refresh_from_db(fields=["last_confirmed", "confidence"])
                return existing
            continue  # removed or moved since we read it: place the fact again
        conflict = _queue(existing=existing, parent=parent, is_isa=is_isa, confidence=confidence, source=source,
                          priority=priority)
        if conflict is not None:
            return conflict
    raise RuntimeError(f"could not place {concept} in [{dimension}]: the slot kept changing")


# The walk up from the parent, within one dimension, roots excluded. UNION (not UNION ALL) ends the walk
# even on data that already holds a cycle.
_ANCESTORS = f"""
    WITH RECURSIVE up(id) AS (
        SELECT %(parent)s::bigint
        UNION
        SELECT e.parent_id FROM {Edge._meta.db_table} e JOIN up ON e.concept_id = up.id
        WHERE e.dimension_id = %(dimension)s AND e.parent_id <> e.concept_id
    )
    SELECT EXISTS (SELECT 1 FROM up WHERE id = %(concept)s)"""


def _closes_cycle(*, concept: Concept, parent: Concept, dimension: Concept) -> bool:
    """Whether `parent` descends from `concept` in `dimension` (concept IN parent would close a cycle).
    Takes the dimension's transaction-scoped advisory lock first: two writers placing qa0 IN qb0 and
    qb0 IN qa0 at once are serialised, and the second one's walk (a statement begun after the first
    committed, so it reads the first one's edge under READ COMMITTED) sees the cycle."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"festinger:dimension:{dimension.pk}"])
        cursor.execute(_ANCESTORS, {"parent": parent.pk, "dimension": dimension.pk, "concept": concept.pk})
        return cursor.fetchone()[0]


def _queue_cycle(*, concept: Concept, parent: Concept, dimension: Concept, is_isa: bool, confidence: float,
                 source: str, priority: bool) -> Conflict:
    """The fact that would close a cycle, as a pending `cycle` Conflict (the same one waiting already is
    returned). Its existing parent is the concept's parent in that dimension, or the dimension itself
    when it has none (the concept hangs from the dimension's root)."""
    current = Edge.objects.filter(concept=concept, dimension=dimension).first()
    key = {"concept": concept, "dimension": dimension, "incoming_parent": parent, "incoming_is_isa": is_isa,
           "status": ConflictStatus.PENDING}
    try:
        with transaction.atomic():
            return Conflict.objects.create(
                workspace_id=concept.workspace_id, existing_parent_id=current.parent_id if current else dimension.pk,
                existing_is_isa=current.is_isa if current else is_isa, incoming_confidence=confidence,
                incoming_source=source, collision_type=CollisionType.CYCLE, priority=priority, **key)
    except IntegrityError:
        return Conflict.objects.get(**key)


_EDGE_INSERT = f"""
    INSERT INTO {Edge._meta.db_table}
        (workspace_id, created_at, concept_id, parent_id, dimension_id, is_isa, confidence, last_confirmed, source)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT DO NOTHING
    RETURNING id"""


def collision_type(*, existing_is_isa: bool, incoming_is_isa: bool) -> str:
    """The seed's table: ISA+ISA -> dimension too coarse, ISPART+ISPART -> contradiction, else misclassified."""
    if existing_is_isa and incoming_is_isa:
        return CollisionType.ISA_ISA
    if not existing_is_isa and not incoming_is_isa:
        return CollisionType.ISPART_ISPART
    return CollisionType.MISCLASSIFICATION


def _queue(*, existing: Edge, parent: Concept, is_isa: bool, confidence: float, source: str,
           priority: bool) -> Conflict | None:
    """The rejected fact as a pending Conflict; the same fact already waiting is returned instead
    (raised to priority when this one is manual). None when that waiting one was decided meanwhile."""
    key = {"concept_id": existing.concept_id, "dimension_id": existing.dimension_id, "incoming_parent": parent,
           "incoming_is_isa": is_isa, "status": ConflictStatus.PENDING}
    try:
        with transaction.atomic():
            return Conflict.objects.create(
                workspace_id=existing.workspace_id, existing_parent_id=existing.parent_id,
                existing_is_isa=existing.is_isa, incoming_confidence=confidence, incoming_source=source,
                collision_type=collision_type(existing_is_isa=existing.is_isa, incoming_is_isa=is_isa),
                priority=priority, **key)
    except IntegrityError:
        conflict = Conflict.objects.select_for_update().filter(**key).first()
        if conflict is None:
            return None
    if priority and not conflict.priority:
        conflict.priority, conflict.incoming_source = True, source
        conflict.incoming_confidence = max(conflict.incoming_confidence, confidence)
        conflict.save(update_fields=["priority", "incoming_source", "incoming_confidence"])
    return conflict


def edge_remove(*, edge: Edge, reason: str, actor: str, conflict: Conflict | None = None) -> EdgeHistory:
    """Remove an edge, keeping it in EdgeHistory. Roots are not removed this way."""
    if edge.is_root:
        raise ApplicationError(f"{edge.concept} is a dimension root and cannot be removed", code="edge_is_root")
    with transaction.atomic():
        history = _history(edge=edge, action=EdgeHistory.Action.REMOVED, reason=reason, actor=actor,
                           conflict=conflict)
        edge.delete()
    writes_committed(edge.workspace_id)
    return history


def edge_move(*, edge: Edge, dimension: Concept, reason: str, actor: str, conflict: Conflict | None = None) -> Edge:
    """Move an edge to another dimension (inside the caller's transaction), keeping what it was in
    EdgeHistory. ApplicationError when the concept already has a parent there, or when the move would
    close a cycle there."""
    if Edge.objects.filter(concept_id=edge.concept_id, dimension=dimension).exclude(pk=edge.pk).exists():
        raise ApplicationError(f"{edge.concept} already has a parent in [{dimension}]", code="dimension_taken")
    if _closes_cycle(concept=edge.concept, parent=edge.parent, dimension=dimension):
        raise ApplicationError(f"{edge.parent} descends from {edge.concept} in [{dimension}]: the move would close "
                               "a cycle", code="cycle")
    _history(edge=edge, action=EdgeHistory.Action.MOVED, reason=reason, actor=actor, conflict=conflict,
             moved_to=dimension)
    edge.dimension = dimension
    edge.save(update_fields=["dimension"])
    return edge


def _history(*, edge: Edge, action: str, reason: str, actor: str, conflict=None, moved_to=None) -> EdgeHistory:
    return EdgeHistory.objects.create(
        workspace_id=edge.workspace_id, concept_id=edge.concept_id, parent_id=edge.parent_id,
        dimension_id=edge.dimension_id, is_isa=edge.is_isa, confidence=edge.confidence,
        last_confirmed=edge.last_confirmed, source=edge.source, edge_created_at=edge.created_at, action=action,
        moved_to=moved_to, reason=reason, conflict=conflict, actor=actor)


def writes_committed(workspace_id: int) -> None:
    """Every change to the graph ends here: once the transaction commits, the version of the
    workspace's world moves in Redis and every process's cache reloads before its next read."""
    transaction.on_commit(lambda: cache.note_write(workspace_id))
