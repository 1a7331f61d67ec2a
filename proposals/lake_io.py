"""Everything proposals read from or write to the lake, in one place."""

import re

from lake.models import Delta
from lake.selectors import deltas_resolve
from lake.services import delta_create, provenance_create


def provenance_write(*, workspace, title: str, child_ids: list[str], level: int, content: str,
                     tags: list[str]) -> str:
    """A kind:provenance delta through the lake's provenance service (from: tags, level tag,
    centroid, the strictly-above check, which raises ApplicationError). Returns "delta:<id>"."""
    delta = provenance_create(workspace=workspace, title=title, child_ids=child_ids, level=level, content=content,
                              tags=[tag_safe(tag) for tag in tags], source="provenance")
    return f"delta:{delta.id}"


def constituents_resolve(*, workspace, ids: list[str]) -> list[Delta]:
    """The constituents by id or unique prefix, in order; ApplicationError for an unknown one."""
    return deltas_resolve(workspace=workspace, ids_or_prefixes=ids)


def constituents(*, workspace, ids: list[str]) -> dict[str, Delta]:
    """The deltas a provenance proposal names, by id (one query; unknown ids are left out)."""
    return Delta.objects.filter(workspace=workspace, pk__in=ids).in_bulk()


def helper_output_write(*, job) -> str:
    """The finished helper job's output as a `kind:helper-output` delta; returns its id."""
    lines = [job.title or f"Helper job {job.pk} on {job.host}", "",
             f"Task: {job.task}", f"Status: {job.status}"
             + (f" (exit {job.exit_code})" if job.exit_code is not None else "")
             + (f": {job.error}" if job.error else "")]
    if job.stdout:
        lines += ["", "Output:", job.stdout.rstrip()]
    if job.stderr and job.status != "succeeded":
        lines += ["", "Errors:", job.stderr.rstrip()]
    tags = ["kind:helper-output", f"helper-host:{job.host}", f"helper-job:{job.pk}", f"helper-status:{job.status}"]
    if job.proposal_id:
        tags.append(f"approved-from-proposal:{job.proposal_id}")
    if job.exit_code is not None:
        tags.append(f"exit-code:{job.exit_code}")
    delta = delta_create(workspace=job.workspace, content="\n".join(lines), tags=tags, source=f"helper:{job.host}")
    return delta.id


def tag_safe(tag: str) -> str:
    """Tags hold no whitespace (a decider named with spaces still tags cleanly)."""
    return re.sub(r"\s+", "-", tag.strip())
