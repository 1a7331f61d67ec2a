"""GET /v1/fires reads a page in a fixed number of queries, however many fires it holds."""

from harness.fires.models import Fire
from harness.fires.services import fire_create
from harness.runtime.services import session_create
from tests.harness.support import page_results_in_fixed_queries

FIRES_PAGE_QUERIES = 2  # the key, the page: nothing per fire


def given_fires(workspace, count, *, session=None):
    for number in range(count):
        parent = fire_create(workspace=workspace, mode=Fire.Mode.REACTIVE, question=f"question {number}",
                             session=session)
        fire_create(workspace=workspace, mode=Fire.Mode.INTROSPECTIVE, question=f"child {number}", parent=parent)


def test_it_lists_fires_in_the_same_number_of_queries_for_few_and_many(api, workspace, django_assert_num_queries):
    given_fires(workspace, 1)
    few, many = page_results_in_fixed_queries(api, "/v1/fires", more=lambda: given_fires(workspace, 10),
                                              queries=FIRES_PAGE_QUERIES, assert_num_queries=django_assert_num_queries)
    assert (len(few), len(many)) == (2, 22)


def test_it_lists_a_sessions_fires_in_a_fixed_number_of_queries(api, workspace, django_assert_num_queries):
    session = session_create(workspace=workspace, title="asked")
    given_fires(workspace, 1, session=session)
    few, many = page_results_in_fixed_queries(
        api, f"/v1/fires?session={session.pk}", more=lambda: given_fires(workspace, 10, session=session),
        queries=FIRES_PAGE_QUERIES + 1, assert_num_queries=django_assert_num_queries)  # and the session named by ?session=
    assert (len(few), len(many)) == (1, 11)
