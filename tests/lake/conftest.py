"""Lake test helpers: write moments and provenance through the services, embedded at once."""

from datetime import UTC, datetime, timedelta

import pytest

from lake.services import deltas_create, deltas_embed, provenance_create

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def moments(workspace):
    """moments(*texts, tags=..., start=T0, step=minutes, embed=True) -> deltas, one per text, in time order."""

    def make(*texts, tags=("kind:note",), start=T0, step=10, embed=True, target=None, source="chat"):
        items = [{"content": text, "tags": list(tags), "source": source, "created_at": start + timedelta(minutes=step * i)}
                 for i, text in enumerate(texts)]
        deltas = deltas_create(workspace=target or workspace, items=items).deltas
        if embed:
            deltas_embed(delta_ids=[delta.id for delta in deltas])
        return deltas

    return make


@pytest.fixture
def provenance(workspace):
    """provenance(title, children, level=None, content="", tags=(), embed=True) -> the provenance delta."""

    def make(title, children, *, level=None, content="", tags=(), embed=True):
        delta = provenance_create(workspace=workspace, title=title, child_ids=[child.id for child in children],
                                  level=level, content=content, tags=list(tags))
        if embed:
            deltas_embed(delta_ids=[delta.id])
            delta.refresh_from_db()
        return delta

    return make
