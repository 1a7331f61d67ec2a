"""The deterministic checks of an answer (no model call): its contract, and its citations against the
lake (cited ids must exist in the workspace and have been returned to the fire; quotes must be in
the cited delta)."""

import re

from harness.fires.models import Fire, FireToolCall
from harness.quality import subtasks
from harness.quality.contracts import (
    ArtifactCounts,
    Citation,
    CitationCheck,
    ContractEvaluator,
    ContractResult,
    ExpectedOutput,
    WorkflowContract,
    citations_check,
    workflow_type_of,
)
from harness.quality.models import QualityRun
from lake.models import Delta

SOURCE_COUNTED_WORKFLOWS = ("synthesis", "full_pipeline")  # their min_insights follow the source count
DELTA_ID = re.compile(r"\b[0-9a-f]{16}\b")


def contract_evaluate(fire: Fire, run: QualityRun, response: dict) -> tuple[ContractResult, CitationCheck]:
    """The answer against its contract, its citations checked against the lake: cited ids must exist
    and have been returned to this fire by a tool (or the pre-flight's retrieval), quotes must be in
    the cited delta. The source count is the distinct existing deltas returned to the fire."""
    citations = citations_of(response)
    # the tool results are read when something needs them: citations to check, or a contract whose
    # minimum grows with the sources (synthesis, full pipeline)
    wanted = citations or str(workflow_type_of(run.complexity.get("workflow_type", ""))) in SOURCE_COUNTED_WORKFLOWS
    returned = (returned_ids(fire) if wanted else set()) | set(run.sources) | subtasks.cited_ids(run)
    counts = ArtifactCounts.from_kinds(card.get("kind", "") for card in response.get("cards") or [])
    check = citations_check(workspace=fire.workspace, citations=citations, returned_ids=returned)
    result = ContractEvaluator.evaluate(contract=contract_for(fire, run, source_count=len(_existing(fire, returned))),
                                        output_text=response.get("body", ""), artifacts=counts, citations=check)
    return result, check


def contract_for(fire: Fire, run: QualityRun, *, source_count: int | None = None) -> WorkflowContract:
    if source_count is None:
        source_count = len(run.sources)
    return WorkflowContract.for_workflow(run.complexity.get("workflow_type", "chat"), source_count=source_count,
                                         expected=ExpectedOutput.from_dict(run.complexity.get("expected")),
                                         quality_multiplier=run.profile.get("quality_multiplier", 1.0)
                                         if run.profile else 1.0)


def citations_of(response: dict) -> list[Citation]:
    """The answer's citations: each card's {id, quote} and cited_ids, and the response's cited_ids."""
    cited = []
    for card in response.get("cards") or []:
        for item in card.get("citations") or []:
            if isinstance(item, dict) and item.get("id"):
                cited.append(Citation(str(item["id"]), str(item.get("quote") or "")))
        cited += [Citation(str(i)) for i in card.get("cited_ids") or []]
    cited += [Citation(str(i)) for i in response.get("cited_ids") or []]
    seen, unique = set(), []
    for citation in cited:
        if (citation.delta_id, citation.quote) not in seen:
            seen.add((citation.delta_id, citation.quote))
            unique.append(citation)
    return unique


def returned_ids(fire: Fire) -> set[str]:
    """Every delta id that appears in a tool result of the fire (candidates: the lake says which exist)."""
    found = set()
    for result in FireToolCall.objects.filter(fire=fire, ok=True).exclude(name="respond").values_list("result",
                                                                                                       flat=True):
        found.update(DELTA_ID.findall(result))
    return found


def _existing(fire: Fire, ids: set[str]) -> set[str]:
    if not ids:
        return set()
    return set(Delta.objects.filter(workspace_id=fire.workspace_id, pk__in=ids).values_list("pk", flat=True))
