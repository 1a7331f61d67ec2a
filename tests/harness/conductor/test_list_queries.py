"""GET /v1/runs reads a page in a fixed number of queries, however many runs it holds."""

from harness.conductor.services import run_create

RUNS_PAGE_QUERIES = 2  # the key, the page: nothing per run


def given_runs(workspace, count):
    for number in range(count):
        run_create(workspace=workspace, objective=f"objective {number}")


def test_it_lists_runs_in_the_same_number_of_queries_for_few_and_many(api, workspace, driver,
                                                                       django_assert_num_queries):
    given_runs(workspace, 1)
    api.get("/v1/runs")  # the key's use is written once a minute: not counted below
    with django_assert_num_queries(RUNS_PAGE_QUERIES):
        few = api.get("/v1/runs")
    given_runs(workspace, 10)
    with django_assert_num_queries(RUNS_PAGE_QUERIES):
        many = api.get("/v1/runs")
    assert (len(few.json()["results"]), len(many.json()["results"])) == (1, 11)
    assert len(driver.pending) == 11  # each run's first step was enqueued, none run
