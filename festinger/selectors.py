"""Festinger's reads: the conflict queue, the resolution runs, the graph's cycles, the world model
(concepts placed in dimensions) and the recollections prompts received, of a workspace."""

from collections import defaultdict

from django.db.models import Count, F, Max, Prefetch, Q
from django.db.models.fields.json import KT

from fathom.errors import NotFoundError
from fathom.tracing.models import TraceEvent
from festinger.models import Concept, Conflict, ConflictStatus, Edge, ResolutionRun
from festinger.recollection import RECOLLECTION_EVENT

_CONFLICT_RELATED = ("concept", "dimension", "existing_parent", "incoming_parent")


def conflicts_list(*, workspace, status=None, collision_type=None, priority=None, concept=None, since=None):
    queryset = Conflict.objects.filter(workspace=workspace).select_related(*_CONFLICT_RELATED)
    if status:
        queryset = queryset.filter(status=status)
    if collision_type:
        queryset = queryset.filter(collision_type=collision_type)
    if priority is not None:
        queryset = queryset.filter(priority=priority)
    if concept:
        queryset = queryset.filter(concept__token=concept.strip().lower())
    if since:
        queryset = queryset.filter(created_at__gte=since)
    return queryset


def conflict_get(*, workspace, conflict_id: int) -> Conflict:
    conflict = Conflict.objects.filter(workspace=workspace, pk=conflict_id).select_related(*_CONFLICT_RELATED).first()
    if conflict is None:
        raise NotFoundError(f"no conflict {conflict_id} in this workspace")
    return conflict


def run_get(*, workspace, run_id: int) -> ResolutionRun:
    run = ResolutionRun.objects.filter(workspace=workspace, pk=run_id).first()
    if run is None:
        raise NotFoundError(f"no resolution run {run_id} in this workspace")
    return run


def pending_count(*, workspace) -> int:
    return Conflict.objects.filter(workspace=workspace, status=ConflictStatus.PENDING).count()


def last_run(*, workspace) -> ResolutionRun | None:
    return ResolutionRun.objects.filter(workspace=workspace).order_by("-created_at", "-id").first()


def cycles_find(*, workspace) -> list[tuple[str, tuple[str, ...]]]:
    """Every cycle in the workspace's graph, as (dimension token, the concepts' tokens in order, the first
    repeated at the end: `qa0 -> qb0 -> qa0`), each once. Roots are not cycles. A dimension is a forest
    when each concept has one parent there and no chain of parents leads back to where it started;
    `services.place` keeps new edges so, and this finds what older data (or a direct SQL write) holds."""
    parent_of: dict[tuple[int, int], int] = {}
    for concept_id, parent_id, dimension_id in Edge.objects.filter(workspace=workspace).exclude(
            concept_id=F("parent_id")).values_list("concept_id", "parent_id", "dimension_id"):
        parent_of[(dimension_id, concept_id)] = parent_id
    done: set[tuple[int, int]] = set()
    cycles = []
    for start in parent_of:
        dimension_id, walk = start[0], []
        node = start
        on_walk: dict[tuple[int, int], int] = {}
        while node in parent_of and node not in done and node not in on_walk:
            on_walk[node] = len(walk)
            walk.append(node[1])
            node = (dimension_id, parent_of[node])
        if node in on_walk:  # the walk came back to a node of its own: the cycle is from there on
            cycles.append((dimension_id, walk[on_walk[node]:]))
        done.update(on_walk)
    tokens = dict(Concept.objects.filter(
        pk__in={pk for dimension_id, members in cycles for pk in (dimension_id, *members)}).values_list("pk", "token"))
    return sorted((tokens[dimension_id], (*(tokens[pk] for pk in members), tokens[members[0]]))
                  for dimension_id, members in cycles)


def recollections_list(*, workspace, session: str | None = None):
    """What Festinger injected into the workspace's prompts (a fire's model calls and proxied calls alike),
    newest first: the calls' `festinger.recollection` trace events, each with its block, the concepts
    recalled and unknown and its conversation (`payload`), and its fire (`run_id`) or proxy (`actor_id`).
    `session`: one conversation's, named as the loop detector names it."""
    rows = TraceEvent.objects.filter(workspace=workspace, kind=RECOLLECTION_EVENT)
    if session:
        rows = rows.filter(payload__session=session)
    return rows.order_by("-at", "-id")


def recollections_of_runs(*, workspace, run_ids) -> dict[str, list[TraceEvent]]:
    """{run id: its recollection events, oldest first} for these runs (a fire's run id is its id): one query."""
    found = defaultdict(list)
    for row in TraceEvent.objects.filter(workspace=workspace, run_id__in=[str(pk) for pk in run_ids],
                                         kind=RECOLLECTION_EVENT).order_by("at", "id"):
        found[row.run_id].append(row)
    return dict(found)


def world_concepts(*, workspace, search: str = "", dimension: str = ""):
    """The concepts of the workspace's world model (placed somewhere: an URD edge that is no dimension's
    root), by token, each with `placed`, its edges (parent and dimension loaded) by dimension. `search`:
    those whose token, or a parent's, contains it (any case); `dimension`: those placed in it (a token).
    Two queries for a page."""
    placed = Edge.objects.filter(workspace=workspace).exclude(concept_id=F("parent_id"))
    wanted = placed.filter(dimension__token=dimension) if dimension else placed
    concepts = Concept.objects.filter(workspace=workspace, pk__in=wanted.values("concept_id"))
    if search:
        search = search.strip().lower()
        concepts = concepts.filter(Q(token__icontains=search)
                                   | Q(pk__in=placed.filter(parent__token__icontains=search).values("concept_id")))
    return concepts.order_by("token").prefetch_related(
        Prefetch("edges", queryset=placed.select_related("parent", "dimension").order_by("dimension__token"),
                 to_attr="placed"))


def world_dimensions(*, workspace) -> list[dict]:
    """The workspace's dimensions (each a root edge's concept) by token, each as {token, concepts}: how many
    concepts are placed in it; one query."""
    return list(Edge.objects.filter(workspace=workspace).values(token=F("dimension__token"))
                .annotate(concepts=Count("id", filter=~Q(concept_id=F("parent_id")))).order_by("token"))


def recollection_conversations(*, workspace, limit: int) -> list[dict]:
    """The conversations whose prompts received recollections (as the loop detector names them), the
    latest first, each as {session, last_at, recollections, from_fires}: how many, and how many of them a
    fire's model calls received; one query."""
    return list(TraceEvent.objects.filter(workspace=workspace, kind=RECOLLECTION_EVENT)
                .values(session=KT("payload__session"))
                .annotate(last_at=Max("at"), recollections=Count("id"),
                          from_fires=Count("id", filter=Q(actor_id__startswith="fire:")))
                .exclude(session__isnull=True).exclude(session="").order_by("-last_at")[:limit])
