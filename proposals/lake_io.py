"""Everything proposals read from or write to the lake, in one place."""

import re

from fathom.errors import ApplicationError
from lake.models import KIND_PREFIX, Delta
from lake.selectors import deltas_resolve, provenance_same
from lake.services import delta_create, deltas_create, provenance_create

PROPOSAL_KIND = "kind:proposal"
DECISION_KIND = "kind:decision"
SOURCE = "proposals"


def provenance_write(*, workspace, title: str, child_ids: list[str], level: int, content: str,
                     tags: list[str]) -> str:
    """A kind:provenance delta through the lake's provenance service (from: tags, level tag,
    centroid, the strictly-above check, which raises ApplicationError). Returns "delta:<id>"."""
    delta = provenance_create(workspace=workspace, title=title, child_ids=child_ids, level=level, content=content,
                              tags=[tag_safe(tag) for tag in tags], source="provenance")
    return f"delta:{delta.id}"


def provenance_unnamed_check(*, workspace, child_ids: list[str], level: int) -> None:
    """ApplicationError (`provenance_exists`) when the lake names these constituents at this level already."""
    same = provenance_same(workspace=workspace, child_ids=child_ids, level=level)
    if same is not None:
        raise ApplicationError(
            f"the same material is named once: provenance {same.id} is level {level} over exactly these "
            f"{len(child_ids)} constituents", code="provenance_exists",
            details={"field": "from_ids", "existing": same.id, "level": level})


def proposal_delta_write(*, proposal, tags=()) -> str:
    """The drafted proposal in the lake (seed 000's flow, so the feed shows every draft): a
    kind:proposal delta tagged `proposal:<id>`, its tool, level and `tags`. Returns its id."""
    what = (f"Level {proposal.level} provenance over {len(proposal.payload.get('from_ids', []))} deltas"
            if proposal.tool == "provenance" else f"A {proposal.tool} proposal")
    content = f"{proposal.title}\n\n{what}, proposed by {proposal.producer}. {proposal.rationale}".strip()
    item = {"content": content, "source": SOURCE, "tags": [
        PROPOSAL_KIND, f"tool:{proposal.tool}", *([f"level:{proposal.level}"] if proposal.level is not None else []),
        f"proposal:{proposal.pk}", *(tag_safe(tag)[:200] for tag in tags)]}
    return deltas_create(workspace=proposal.workspace, items=[item]).deltas[0].id


def decision_delta_write(*, proposal, decision) -> str:
    """A decision on a proposal in the lake: a kind:decision delta carrying the proposal delta's own
    tags (`proposal:<id>`, the producer's), what it decided and what it produced. Returns its id."""
    mirrored = (Delta.objects.filter(workspace=proposal.workspace, tags__contains=[PROPOSAL_KIND, f"proposal:{proposal.pk}"])
                .values_list("tags", flat=True).first() or [f"proposal:{proposal.pk}"])
    carried = [tag for tag in mirrored if not tag.startswith((KIND_PREFIX, "tool:", "level:"))]
    reason = decision.reason or decision.error
    text = f"{proposal.status}: {proposal.title} ({decision.decided_by})" + (f": {reason}" if reason else "")
    tags = [DECISION_KIND, f"decision:{proposal.status}", tag_safe(f"decided-by:{decision.decided_by}")[:200],
            *([f"result:{decision.result_ref}"] if decision.result_ref else []), *carried]
    return deltas_create(workspace=proposal.workspace, items=[{"content": text, "source": SOURCE, "tags": tags}]).deltas[0].id


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
