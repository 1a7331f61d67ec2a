"""GET /v1/runs reads a page in a fixed number of queries, however many runs it holds."""

from harness.conductor.services import run_create
from tests.harness.support import page_results_in_fixed_queries

RUNS_PAGE_QUERIES = 2  # the key, the page: nothing per run


def given_runs(workspace, count):
    for number in range(count):
        run_create(workspace=workspace, objective=f"objective {number}")


def test_it_lists_runs_in_the_same_number_of_queries_for_few_and_many(api, workspace, driver,
                                                                       django_assert_num_queries):
    given_runs(workspace, 1)
    few, many = page_results_in_fixed_queries(api, "/v1/runs", more=lambda: given_runs(workspace, 10),
                                              queries=RUNS_PAGE_QUERIES, assert_num_queries=django_assert_num_queries)
    assert (len(few), len(many)) == (1, 11)
    assert len(driver.pending) == 11  # each run's first step was enqueued, none run
