"""Festinger's reads: the conflict queue and the resolution runs of a workspace."""

from fathom.errors import NotFoundError
from festinger.models import Conflict, ConflictStatus, ResolutionRun

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
