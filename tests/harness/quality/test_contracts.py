import pytest

from harness.quality.contracts import (
    ArtifactCounts,
    Citation,
    CitationCheck,
    ContractEvaluator,
    ExpectedOutput,
    UnfoundedCitation,
    WorkflowContract,
    WorkflowType,
    citations_check,
    citations_judge,
)
from lake.services import delta_create

ROW = ("min_insights", "min_recommendations", "min_documents", "require_citations", "require_artifacts",
       "min_output_chars")


def row(contract: WorkflowContract) -> tuple:
    return tuple(getattr(contract, name) for name in ROW)


@pytest.mark.parametrize(("workflow", "source_count", "expected"), [
    ("synthesis", 0, (1, 0, 0, True, True, 100)),
    ("synthesis", 4, (4, 0, 0, True, True, 100)),
    ("synthesis", 25, (10, 0, 0, True, True, 100)),
    ("recommendation", 7, (0, 1, 0, False, True, 100)),
    ("drafting", 7, (0, 0, 1, False, True, 200)),
    ("full_pipeline", 3, (3, 1, 1, True, True, 200)),
    ("full_pipeline", 0, (1, 1, 1, True, True, 200)),
    ("chat", 9, (0, 0, 0, False, False, 50)),
    ("no-such-type", 9, (0, 0, 0, False, False, 50)),  # held to chat's contract
])
def test_base_contracts_are_the_seeds_table(workflow, source_count, expected):
    assert row(WorkflowContract.for_workflow(workflow, source_count=source_count)) == expected


@pytest.mark.parametrize(("workflow", "source_count", "multiplier", "insights", "chars"), [
    ("synthesis", 10, 1.15, 12, 115),  # 11.5 rounds up
    ("synthesis", 10, 0.85, 9, 85),  # 8.5 rounds up
    ("synthesis", 1, 0.85, 1, 85),  # 0.85 insight: floored at 1
    ("synthesis", 3, 0.10, 1, 50),  # floors of 1 insight and 50 chars
    ("chat", 0, 0.85, 0, 50),  # 42.5 chars: floored at 50; no insight required stays none
    ("chat", 0, 1.15, 0, 58),  # 57.5 rounds up
    ("drafting", 0, 1.15, 0, 230),
    ("synthesis", 4, 1.0, 4, 100),
])
def test_the_workspace_multiplier_scales_insights_and_chars_with_floors(workflow, source_count, multiplier,
                                                                         insights, chars):
    contract = WorkflowContract.for_workflow(workflow, source_count=source_count, quality_multiplier=multiplier)
    assert (contract.min_insights, contract.min_output_chars) == (insights, chars)


def test_expected_output_overrides_the_fields_it_names_unscaled():
    expected = ExpectedOutput.from_dict({"min_insights": 5, "require_citations": True, "unknown": 1})
    contract = WorkflowContract.for_workflow("chat", expected=expected, quality_multiplier=0.85)
    assert row(contract) == (5, 0, 0, True, False, 50)
    assert ExpectedOutput.from_dict(None) == ExpectedOutput()
    assert expected.as_dict() == {"min_insights": 5, "require_citations": True}


THREE_INSIGHTS = ArtifactCounts(insights=3)


def evaluate(workflow="synthesis", *, source_count=3, text="x" * 300, counts=THREE_INSIGHTS,
             citations=None, multiplier=1.0):
    contract = WorkflowContract.for_workflow(workflow, source_count=source_count, quality_multiplier=multiplier)
    return ContractEvaluator.evaluate(contract=contract, output_text=text, artifacts=counts, citations=citations)


FOUNDED = CitationCheck(citations=(Citation("a" * 16, "quote"),), sources_used=("a" * 16,))


def test_a_complete_synthesis_passes_every_check():
    result = evaluate(citations=FOUNDED)
    assert (result.passed, result.score, result.issues) == (True, 1.0, [])
    assert result.checks == {"output_chars": True, "insights": True, "citations": True, "artifacts": True,
                             "citations_founded": True}


def test_contract_issues_use_the_seeds_wording():
    result = evaluate(text="y" * 42, counts=ArtifactCounts(), citations=None)
    assert result.passed is False
    assert result.issues == [
        "Output too short: 42 chars (minimum 100)",
        "Insufficient insights: 0 created (minimum 3)",
        "Citations required but none found — insights must include direct quotes from sources",
        "No artifacts created — at least one insight, recommendation, or document is required",
    ]
    assert result.score == 0.0


def test_the_score_is_the_fraction_of_checks_passed():
    result = evaluate(counts=ArtifactCounts(insights=1), citations=FOUNDED)
    assert result.issues == ["Insufficient insights: 1 created (minimum 3)"]
    assert result.score == 0.8
    assert result.as_event()["artifact_counts"] == {"insights": 1, "recommendations": 0, "documents": 0}


def test_recommendation_and_drafting_count_their_own_artifacts():
    recommendation = evaluate("recommendation", counts=ArtifactCounts(insights=2))
    assert recommendation.issues == ["Insufficient recommendations: 0 created (minimum 1)"]
    drafting = evaluate("drafting", counts=ArtifactCounts(documents=1), text="z" * 150)
    assert drafting.issues == ["Output too short: 150 chars (minimum 200)"]


def test_chat_needs_only_fifty_characters():
    assert evaluate("chat", text="w" * 49, counts=ArtifactCounts()).issues == [
        "Output too short: 49 chars (minimum 50)"]
    assert evaluate("chat", text="w" * 50, counts=ArtifactCounts()).passed is True


def test_a_new_workspaces_lower_bar_passes_what_the_standard_bar_fails():
    # synthesis over 10 sources: 9 insights pass at 0.85 (new) and fail at 1.0 (developing)
    assert evaluate(source_count=10, counts=ArtifactCounts(insights=9), citations=FOUNDED, multiplier=0.85).passed
    assert evaluate(source_count=10, counts=ArtifactCounts(insights=9), citations=FOUNDED).issues == [
        "Insufficient insights: 9 created (minimum 10)"]


def test_artifact_counts_from_kinds_and_summary():
    counts = ArtifactCounts.from_kinds(["insight", "kind:insight", "insight", "document", "orient"])
    assert counts == ArtifactCounts(insights=3, documents=1)
    assert counts.summary() == "3 insights, 1 document"
    assert ArtifactCounts().summary() == "no artifacts"


def test_unfounded_citations_fail_the_contract_one_issue_each():
    check = CitationCheck(citations=(Citation("a" * 16), Citation("b" * 16)),
                          unfounded=(UnfoundedCitation(Citation("b" * 16), "no such delta in this workspace"),),
                          sources_used=("a" * 16,))
    result = evaluate(citations=check)
    assert result.passed is False
    assert result.issues == [f"Unfounded citation [{'b' * 16}]: no such delta in this workspace"]
    assert result.score == 0.8


# --- the citation check against the lake -----------------------------------------------------------

def test_citations_judge_without_the_lake():
    contents = {"1234567890abcdef": "Revenue grew  12%\nin March.", "1234567899999999": "other"}
    check = citations_judge([Citation("[1234567890ABCDEF]", "“Revenue grew 12% in March”"),
                             Citation("12345678", ""), Citation("xyz", "")],
                            returned_ids={"1234567890abcdef"}, contents=contents)
    assert check.issues == ["Unfounded citation [12345678]: the prefix matches more than one delta",
                            "Unfounded citation [xyz]: not a delta id"]


@pytest.mark.django_db
def test_unfounded_citations_are_caught_against_the_lake(workspace, other_workspace, django_assert_num_queries):
    returned = delta_create(workspace=workspace, content="Churn rose to 7% in Q3,\n  mostly small teams.")
    unreturned = delta_create(workspace=workspace, content="Pricing page visits doubled.")
    elsewhere = delta_create(workspace=other_workspace, content="Churn rose to 7% in Q3, mostly small teams.")
    citations = [
        Citation(returned.id, "Churn rose to 7% in Q3, mostly small teams"),  # whitespace differs: founded
        Citation(f"[{returned.id[:8].upper()}]", ""),  # a unique prefix, no quote: founded
        Citation(returned.id, "Churn fell to 2%"),  # a quote the delta does not hold
        Citation(unreturned.id, "Pricing page visits doubled."),  # exists, never returned to the fire
        Citation(elsewhere.id, "Churn rose to 7%"),  # another workspace's delta
        Citation("0123456789abcdef", ""),  # no such delta anywhere
        Citation("not-an-id", ""),
    ]
    with django_assert_num_queries(1):
        check = citations_check(workspace=workspace, citations=citations,
                                returned_ids={returned.id, elsewhere.id})
    assert (check.total, check.founded, check.sources_used) == (7, 2, (returned.id,))
    assert check.issues == [
        f'Unfounded citation [{returned.id}]: quote not found in the delta ("Churn fell to 2%")',
        f"Unfounded citation [{unreturned.id}]: not returned to this fire by a tool",
        f"Unfounded citation [{elsewhere.id}]: no such delta in this workspace",
        "Unfounded citation [0123456789abcdef]: no such delta in this workspace",
        "Unfounded citation [not-an-id]: not a delta id",
    ]
    result = evaluate(citations=check)
    assert result.passed is False and result.issues == check.issues


def test_a_citation_of_a_fires_own_write_is_founded_but_is_no_source():
    # given a source and an earlier answer's insight card (a fire's own write), both returned to the fire
    contents = {"1234567890abcdef": "Churn rose to 7%.", "fedcba0987654321": "Churn is rising [1234567890abcdef]."}
    check = citations_judge([Citation("fedcba0987654321"), Citation("1234567890abcdef")],
                            returned_ids=set(contents), contents=contents, own_ids={"fedcba0987654321"})
    # then both are founded, and the source used is the source alone
    assert (check.founded, check.sources_used) == (2, ("1234567890abcdef",))
    only_own = citations_judge([Citation("fedcba0987654321")], returned_ids=set(contents), contents=contents,
                               own_ids={"fedcba0987654321"})
    assert evaluate(citations=only_own, counts=ArtifactCounts(insights=1), source_count=0).issues == [
        "Citations required but none found — insights must include direct quotes from sources"]


@pytest.mark.django_db
def test_citations_check_with_no_valid_id_reads_nothing(workspace, django_assert_num_queries):
    with django_assert_num_queries(0):
        check = citations_check(workspace=workspace, citations=[Citation("nope")], returned_ids=())
    assert check.issues == ["Unfounded citation [nope]: not a delta id"]
    assert WorkflowType("full_pipeline") is WorkflowType.FULL_PIPELINE


@pytest.mark.parametrize(("quote", "founded"), [
    ("Revenue grew 12% in March", True),
    ("“Revenue grew 12%\n in March”", True),  # typographic marks around it, a line break inside
    ("the team’s plan", True),  # a typographic apostrophe for the source's straight one
    ("Revenue grew ... the team's plan", True),  # an ellipsis elides a stretch
    ("Revenue grew […] plan held", True),
    ("the team's plan ... Revenue grew", False),  # the parts out of order
    ("revenue grew 12%", False),  # case is kept
    ("Revenue fell", False),
    ("...", True),  # nothing quoted after all
])
def test_quotes_are_matched_with_normalised_whitespace_typography_and_ellipses(quote, founded):
    contents = {"1234567890abcdef": "Revenue grew   12% in March;\nthe team's plan held."}
    check = citations_judge([Citation("1234567890abcdef", quote)], returned_ids={"1234567890abcdef"},
                            contents=contents)
    assert (not check.unfounded) is founded


@pytest.mark.parametrize(("data", "expected"), [
    ({"min_insights": 3, "min_output_chars": 400.0, "require_citations": False},
     ExpectedOutput(min_insights=3, min_output_chars=400, require_citations=False)),
    ({"min_insights": "3", "min_documents": -1, "min_recommendations": 1.5, "require_citations": "yes"},
     ExpectedOutput()),
    ({"min_insights": True}, ExpectedOutput()),
    ("not a mapping", ExpectedOutput()),
])
def test_expected_output_keeps_only_well_typed_values(data, expected):
    assert ExpectedOutput.from_dict(data) == expected
