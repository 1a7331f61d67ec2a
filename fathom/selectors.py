"""Reads every app uses: a workspace's row by a client-given id."""

import uuid

from fathom.errors import NotFoundError
from fathom.models import ApiKey, Membership, ModelAssignment


def uuid_or_none(value) -> uuid.UUID | None:
    """`value` as a UUID, or None when it is not one (a client-given id never raises here)."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def workspace_row_get(model, *, workspace, pk, noun: str):
    """The `model` row with UUID `pk` in `workspace`; NotFoundError (404) for a malformed id, an unknown
    one, or another workspace's."""
    row = model.objects.filter(workspace=workspace, pk=uuid_or_none(pk)).first()
    if row is None:
        raise NotFoundError(f"no {noun} {pk} in this workspace")
    return row


def memberships_of(*, user):
    """The user's memberships with their workspaces, in workspace slug order (the dashboard's switcher)."""
    return Membership.objects.filter(user=user).select_related("workspace").order_by("workspace__slug")


def apikeys_active(*, workspace):
    """The workspace's keys that are not revoked, newest first."""
    return ApiKey.objects.filter(workspace=workspace, revoked_at=None)


def model_assignments_of(*, workspace):
    """The roles this workspace maps to registry models, with their models."""
    return ModelAssignment.objects.filter(workspace=workspace).select_related("model").order_by("role")
