import pytest

from harness.quality.plans import Plan, PlanSelector, Subtask, coverage, feasibility, plan_score
from harness.quality.selectors import WorkspaceStats, workspace_stats
from lake.services import delta_create, provenance_create

QUERY = "Synthesise customer interviews about pricing churn"
RICH = WorkspaceStats(delta_count=12, kinds={"insight": 2, "provenance": 1, "note": 9})
EMPTY = WorkspaceStats()


def plan(description="", modifier="", turns=3, workflow="synthesis", subtasks=()):
    return Plan(description=description, prompt_modifier=modifier, subtasks=tuple(subtasks), estimated_turns=turns,
                suggested_workflow=workflow)


def test_each_dimension_and_the_weighted_total():
    candidate = plan("Synthesise the interviews", "focus on pricing", turns=4, workflow="synthesis")
    score = plan_score(candidate, query=QUERY, workflow_type="synthesis", workspace_stats=RICH)
    # keywords: synthesis, custom, interview, price, churn -> 3 of 5 covered
    assert score.coverage == pytest.approx(3 / 5)
    assert score.feasibility == 1.0  # 12 - 1 provenance - 2 insights = 9 sources >= 5
    assert score.efficiency == 0.25
    assert score.alignment == 1.0
    assert score.total == pytest.approx(0.35 * 0.6 + 0.25 * 1.0 + 0.20 * 0.25 + 0.20 * 1.0)


@pytest.mark.parametrize(("workflow", "stats", "expected"), [
    ("synthesis", WorkspaceStats(delta_count=3, kinds={"insight": 1}), 2 / 5),
    ("synthesis", WorkspaceStats(delta_count=40, kinds={"provenance": 38}), 2 / 5),  # summaries are no sources
    ("full_pipeline", RICH, 1.0),
    ("synthesis", EMPTY, 0.0),
    ("recommendation", RICH, 1.0),
    ("recommendation", WorkspaceStats(delta_count=3), 0.5),
    ("recommendation", EMPTY, 0.0),
    ("drafting", WorkspaceStats(delta_count=1), 1.0),
    ("drafting", EMPTY, 0.5),
    ("chat", EMPTY, 1.0),
    ("astrology", RICH, 0.5),
])
def test_feasibility_reads_what_the_workspace_holds(workflow, stats, expected):
    assert feasibility(workflow, stats) == pytest.approx(expected)


def test_coverage_of_a_query_without_keywords_is_zero():
    assert coverage("what is the", plan("anything")) == 0.0


def test_the_best_plan_wins_and_every_candidates_scores_are_returned():
    candidates = [
        plan("Draft a memo", turns=2, workflow="drafting"),
        plan("Synthesise customer interviews on pricing and churn", turns=3, workflow="synthesis",
             subtasks=[Subtask("read interviews", parallel=True), Subtask("merge")]),
        plan("Look around", turns=8, workflow="synthesis"),
    ]
    selection = PlanSelector.select(candidates, query=QUERY, workflow_type="synthesis", workspace_stats=RICH)
    assert selection.plan is candidates[1]
    assert selection.fallback is False
    assert selection.candidates_count == 3
    assert [round(s["total"], 4) for s in selection.scores] == [
        round(plan_score(c, query=QUERY, workflow_type="synthesis", workspace_stats=RICH).total, 4)
        for c in candidates]
    assert selection.score == max(s["total"] for s in selection.scores)
    event = selection.as_event()
    assert event["plan"]["subtasks"] == [{"title": "read interviews", "parallel": True},
                                         {"title": "merge", "parallel": False}]
    assert event["candidates_count"] == 3


def test_selection_is_deterministic_over_runs_and_orders():
    candidates = [plan("Synthesise pricing", turns=2), plan("Synthesise churn", turns=5),
                  plan("interviews customer", turns=3, workflow="chat")]
    chosen = {PlanSelector.select(candidates, query=QUERY, workflow_type="synthesis",
                                  workspace_stats=RICH).plan for _ in range(5)}
    assert chosen == {candidates[0]}
    assert PlanSelector.select(list(reversed(candidates)), query=QUERY, workflow_type="synthesis",
                               workspace_stats=RICH).plan == candidates[0]


def test_an_exact_tie_with_equal_turns_goes_to_the_earlier_candidate():
    first, second = plan("pricing", turns=2), plan("churn", turns=2)  # 1 of 5 keywords each
    assert plan_score(first, query=QUERY, workflow_type="synthesis", workspace_stats=RICH).total == \
        plan_score(second, query=QUERY, workflow_type="synthesis", workspace_stats=RICH).total
    assert PlanSelector.select([first, second], query=QUERY, workflow_type="synthesis",
                               workspace_stats=RICH).plan is first
    assert PlanSelector.select([second, first], query=QUERY, workflow_type="synthesis",
                               workspace_stats=RICH).plan is second


def test_an_exact_tie_on_total_goes_to_fewer_turns_wherever_it_is_listed():
    # 7 keywords: 2 covered at 2 turns (0.35 * 2/7 + 0.20 * 0.5 = 0.2) ties 0 covered at 1 turn (0.20 * 1)
    query = "alpha bravo charlie delta echo foxtrot golf"
    slow, fast = plan("alpha bravo", turns=2, workflow="chat"), plan("zulu", turns=1, workflow="chat")
    totals = {plan_score(p, query=query, workflow_type="chat", workspace_stats=EMPTY).total for p in (slow, fast)}
    assert totals == {0.65}  # one total: feasibility 0.25 + alignment 0.2 + 0.2
    for order in ([slow, fast], [fast, slow]):
        assert PlanSelector.select(order, query=query, workflow_type="chat", workspace_stats=EMPTY).plan is fast


@pytest.mark.parametrize("candidates", [
    [],
    None,
    [{"prompt_modifier": "no description"}],
    [{"description": "fine"}, "not a plan"],
    [{"description": "bad turns", "estimated_turns": "many"}],
])
def test_any_error_yields_the_one_default_plan(candidates):
    selection = PlanSelector.select(candidates, query=QUERY, workflow_type="synthesis", workspace_stats=RICH)
    assert selection.fallback is True
    assert selection.plan == Plan(description="Execute synthesis workflow directly", estimated_turns=1,
                                  suggested_workflow="synthesis")
    assert selection.error


def test_plans_from_the_planners_json():
    selection = PlanSelector.select(
        [{"description": "Synthesise interviews", "prompt_modifier": "quote them", "estimated_turns": 2,
          "suggested_workflow": "synthesis", "subtasks": [{"title": "read", "parallel": True}, "write"]}],
        query=QUERY, workflow_type="synthesis", workspace_stats=RICH)
    assert selection.fallback is False
    assert selection.plan.subtasks == (Subtask("read", True), Subtask("write", False))


@pytest.mark.django_db
def test_workspace_stats_counts_deltas_kinds_and_levels_in_one_query(workspace, other_workspace,
                                                                     django_assert_num_queries):
    moments = [delta_create(workspace=workspace, content="c", tags=tags)
               for tags in (["kind:insight"], ["kind:insight", "kind:note"], [], [])]
    provenance_create(workspace=workspace, title="an episode", child_ids=[moments[2].id, moments[3].id])
    delta_create(workspace=other_workspace, content="elsewhere", tags=["kind:insight"])
    with django_assert_num_queries(1):
        stats = workspace_stats(workspace=workspace)
    assert stats == WorkspaceStats(delta_count=5, kinds={"insight": 2, "note": 1, "provenance": 1},
                                   provenance_by_level={1: 1})
    assert stats.provenance_count == 1
    with django_assert_num_queries(1):
        assert workspace_stats(workspace=other_workspace).delta_count == 1
