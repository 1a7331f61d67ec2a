import pytest

from harness.quality.contracts import (
    ArtifactCounts,
    Citation,
    CitationCheck,
    ContractEvaluator,
    UnfoundedCitation,
    WorkflowContract,
)
from harness.quality.scores import grade_of, harness_doc_qs, harness_rec_qs, harness_rqs, quality_scores

TWO_FOUNDED_ONE_NOT = CitationCheck(citations=(Citation("a" * 16), Citation("b" * 16), Citation("c" * 16)),
                                    unfounded=(UnfoundedCitation(Citation("c" * 16), "no such delta"),),
                                    sources_used=("a" * 16, "b" * 16))
ALL_FOUNDED = CitationCheck(citations=(Citation("a" * 16),), sources_used=("a" * 16,))


def contract_result(workflow, *, counts, chars=400, citations=None, source_count=2):
    contract = WorkflowContract.for_workflow(workflow, source_count=source_count)
    return ContractEvaluator.evaluate(contract=contract, output_text="x" * chars, artifacts=counts, citations=citations)


def test_rqs_is_the_documented_weighted_sum():
    contract = contract_result("synthesis", counts=ArtifactCounts(insights=2), citations=ALL_FOUNDED)
    assert contract.passed
    result = harness_rqs(contract=contract, verifier_score=0.8, citations=ALL_FOUNDED)
    assert result.score == pytest.approx(0.30 * 1.0 + 0.40 * 0.8 + 0.30 * 1.0)  # 0.92
    assert (result.grade, result.label) == ("A", "Excellent")
    assert result.breakdown["verifier"] == {"value": 0.8, "weight": 0.40, "points": 0.32}
    assert result.breakdown["capped_by_failed_contract"] is False


def test_unfounded_citations_lower_grounding_and_a_failed_contract_caps_the_score():
    contract = contract_result("synthesis", counts=ArtifactCounts(insights=2), citations=TWO_FOUNDED_ONE_NOT)
    assert not contract.passed and contract.score == 0.8
    result = harness_rqs(contract=contract, verifier_score=1.0, citations=TWO_FOUNDED_ONE_NOT)
    # 0.3 * 0.8 + 0.4 + 0.3 * 2/3 = 0.84, capped at 0.69 because the contract failed
    assert result.breakdown["grounding"]["value"] == pytest.approx(0.667)
    assert (result.score, result.grade, result.breakdown["capped_by_failed_contract"]) == (0.69, "D", True)


def test_no_citations_where_they_are_required_score_zero_grounding():
    contract = contract_result("synthesis", counts=ArtifactCounts(insights=2))
    result = harness_rqs(contract=contract, verifier_score=0.5)
    assert result.breakdown["grounding"]["value"] == 0.0
    assert result.score == pytest.approx(min(0.69, 0.30 * 0.75 + 0.40 * 0.5))  # 0.425
    assert result.grade == "F"


def test_rec_qs_and_doc_qs_weigh_the_verifier_most_and_need_no_citation():
    recommendation = contract_result("recommendation", counts=ArtifactCounts(recommendations=1))
    assert harness_rec_qs(contract=recommendation, verifier_score=0.6).score == pytest.approx(0.35 + 0.30 + 0.15)
    drafting = contract_result("drafting", counts=ArtifactCounts(documents=1))
    doc = harness_doc_qs(contract=drafting, verifier_score=0.6)
    assert doc.score == pytest.approx(0.40 + 0.30 + 0.10)
    assert (doc.grade, doc.label) == ("B", "Good")


def test_the_verifier_score_is_clamped():
    drafting = contract_result("drafting", counts=ArtifactCounts(documents=1))
    assert harness_doc_qs(contract=drafting, verifier_score=7).score == 1.0
    assert harness_doc_qs(contract=drafting, verifier_score=-1).score == 0.5


@pytest.mark.parametrize(("score", "expected"), [
    (1.0, ("A", "Excellent")), (0.9, ("A", "Excellent")), (0.899, ("B", "Good")), (0.8, ("B", "Good")),
    (0.7, ("C", "Acceptable")), (0.6, ("D", "Weak")), (0.599, ("F", "Poor")), (0.0, ("F", "Poor")),
])
def test_grades(score, expected):
    assert grade_of(score) == expected


def test_which_scores_each_workflow_emits():
    contract = contract_result("full_pipeline", counts=ArtifactCounts(insights=2, recommendations=1, documents=1),
                               citations=ALL_FOUNDED)
    assert list(quality_scores("full_pipeline", contract=contract, verifier_score=0.9, citations=ALL_FOUNDED)) == [
        "harness_rqs", "harness_rec_qs", "harness_doc_qs"]
    assert list(quality_scores("synthesis", contract=contract, verifier_score=0.9)) == ["harness_rqs"]
    assert quality_scores("chat", contract=contract, verifier_score=0.9) == {}
