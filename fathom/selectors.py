"""Reads every app uses: a workspace's row by a client-given id."""

import uuid

from fathom.errors import NotFoundError


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
