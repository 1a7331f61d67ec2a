"""The deterministic checks of an answer (no model call): its contract, and its citations against the
lake wherever the answer makes them (cards' citations, cited_ids, and delta ids written in its text):
cited ids must exist in the workspace and have been returned to the fire; quotes must be in the
cited delta."""

import re

from harness.fires.models import Fire
from harness.fires.selectors import fire_returned_ids
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
)
from harness.quality.models import QualityRun
from lake.models import ID_LENGTH, MIN_PREFIX_LENGTH

# An id in the answer's text: a whole delta id, or a bracketed prefix ("[deadbeef]", as the tools show them).
TEXT_ID = re.compile(rf"\[([0-9a-fA-F]{{{MIN_PREFIX_LENGTH},{ID_LENGTH}}})\]|\b([0-9a-f]{{{ID_LENGTH}}})\b")


def contract_evaluate(fire: Fire, run: QualityRun, response: dict) -> tuple[ContractResult, CitationCheck]:
    """The answer against its contract, its citations checked against the lake: cited ids must exist
    and have been returned to this fire by a tool (or the pre-flight's retrieval), quotes must be in
    the cited delta. The source count (synthesis asks one insight per source) is what the answer used:
    the distinct deltas its founded citations name, never the fires' own writes."""
    citations = citations_of(response)
    returned = (fire_returned_ids(fire=fire) if citations else set()) | set(run.sources) | subtasks.cited_ids(run)
    counts = ArtifactCounts.from_kinds(card.get("kind", "") for card in response.get("cards") or [])
    check = citations_check(workspace=fire.workspace, citations=citations, returned_ids=returned)
    result = ContractEvaluator.evaluate(contract=contract_for(fire, run, source_count=check.source_count),
                                        output_text=response.get("body", ""), artifacts=counts, citations=check)
    return result, check


def contract_for(fire: Fire, run: QualityRun, *, source_count: int = 0) -> WorkflowContract:
    """The run's contract, its source-counted minimum (synthesis, full pipeline) at the seed's floor
    unless the count of sources the answer used is given; the workspace's thresholds are those it had
    when the run was classified (kept in its complexity)."""
    return WorkflowContract.for_workflow(run.complexity.get("workflow_type", "chat"), source_count=source_count,
                                         expected=ExpectedOutput.from_dict(run.complexity.get("expected")),
                                         workspace=ExpectedOutput.from_dict(run.complexity.get("workspace_contract")),
                                         quality_multiplier=run.profile.get("quality_multiplier", 1.0)
                                         if run.profile else 1.0)


def citations_of(response: dict) -> list[Citation]:
    """The answer's citations wherever it makes them: each card's {id, quote}, cited_ids and the ids
    written in its body, and the response's cited_ids and the ids written in its body (see TEXT_ID)."""
    cited = []
    for card in response.get("cards") or []:
        for item in card.get("citations") or []:
            if isinstance(item, dict) and item.get("id"):
                cited.append(Citation(str(item["id"]), str(item.get("quote") or "")))
        cited += [Citation(str(i)) for i in card.get("cited_ids") or []]
        cited += text_citations(str(card.get("body") or ""))
    cited += [Citation(str(i)) for i in response.get("cited_ids") or []]
    cited += text_citations(str(response.get("body") or ""))
    seen, unique = set(), []
    for citation in cited:
        if (citation.delta_id, citation.quote) not in seen:
            seen.add((citation.delta_id, citation.quote))
            unique.append(citation)
    return unique


def text_citations(text: str) -> list[Citation]:
    """The delta ids written in a text: bracketed ids or prefixes, and whole ids standing alone."""
    return [Citation((bracketed or bare).lower()) for bracketed, bare in TEXT_ID.findall(text)]
