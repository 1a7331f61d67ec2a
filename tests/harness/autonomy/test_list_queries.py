"""The autonomy lists (decisions, the inbox, the crystal of directives) read a page in a fixed
number of queries, however many rows it holds and however many of them are marked."""

from django.utils import timezone

from harness.autonomy.models import AutonomyDecision
from harness.autonomy.selectors import SELF_DIRECTING_TAG
from lake.services import delta_create
from tests.harness.support import page_results_in_fixed_queries

PAGE_QUERIES = 2  # the key, the page (an inbox item's mark is a subquery of it): nothing per row


def given_decisions(workspace, count):
    for number in range(count):
        AutonomyDecision.objects.create(
            workspace=workspace, mode="observe", action=AutonomyDecision.Action.SKIP if number % 2 else
            AutonomyDecision.Action.WOULD_SIT, reason="below_threshold", window_start=timezone.now())


def given_inbox(api, workspace, count):
    """`count` directives, transcripts and reflections, one in three of them acted on or acknowledged."""
    for number in range(count):
        items = [delta_create(workspace=workspace, content=f"directive {number}", tags=["kind:directive"]),
                 delta_create(workspace=workspace, content=f"transcript {number}",
                              tags=[SELF_DIRECTING_TAG, "kind:card"]),
                 delta_create(workspace=workspace, content=f"reflection {number}", tags=["kind:reflection"])]
        marked = items[number % 3]
        action = "acknowledge" if number % 2 else "act"
        assert api.post(f"/v1/autonomy/inbox/{marked.id}", {"action": action}, format="json").status_code == 200


def test_it_lists_decisions_in_the_same_number_of_queries_for_few_and_many(api, workspace,
                                                                            django_assert_num_queries):
    given_decisions(workspace, 1)
    few, many = page_results_in_fixed_queries(api, "/v1/autonomy/decisions", more=lambda: given_decisions(workspace, 10),
                                              queries=PAGE_QUERIES, assert_num_queries=django_assert_num_queries)
    assert (len(few), len(many)) == (1, 11)


def test_it_lists_the_inbox_in_the_same_number_of_queries_for_few_and_many(api, workspace,
                                                                            django_assert_num_queries):
    given_inbox(api, workspace, 1)
    few, many = page_results_in_fixed_queries(api, "/v1/autonomy/inbox", more=lambda: given_inbox(api, workspace, 6),
                                              queries=PAGE_QUERIES, assert_num_queries=django_assert_num_queries)
    assert (len(few), len(many)) == (3, 21)
    assert sorted({item["state"] for item in many}) == ["acknowledged", "acted", "new"]
    assert sum(item["trigger"] is not None for item in many) == 4


def test_it_lists_the_directives_in_the_same_number_of_queries_for_few_and_many(api, workspace,
                                                                                 django_assert_num_queries):
    given_inbox(api, workspace, 1)
    few, many = page_results_in_fixed_queries(api, "/v1/autonomy/directives", more=lambda: given_inbox(api, workspace, 6),
                                              queries=PAGE_QUERIES, assert_num_queries=django_assert_num_queries)
    assert (len(few), len(many)) == (1, 7)
