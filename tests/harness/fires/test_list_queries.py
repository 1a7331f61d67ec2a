"""GET /v1/fires reads a page in a fixed number of queries, however many fires it holds."""

from harness.fires.models import Fire
from harness.fires.services import fire_create
from harness.runtime.services import session_create

FIRES_PAGE_QUERIES = 2  # the key, the page: nothing per fire


def given_fires(workspace, count, *, session=None):
    for number in range(count):
        parent = fire_create(workspace=workspace, mode=Fire.Mode.REACTIVE, question=f"question {number}",
                             session=session)
        fire_create(workspace=workspace, mode=Fire.Mode.INTROSPECTIVE, question=f"child {number}", parent=parent)


def test_it_lists_fires_in_the_same_number_of_queries_for_few_and_many(api, workspace, django_assert_num_queries):
    given_fires(workspace, 1)
    api.get("/v1/fires")  # the key's use is written once a minute: not counted below
    with django_assert_num_queries(FIRES_PAGE_QUERIES):
        few = api.get("/v1/fires")
    given_fires(workspace, 10)
    with django_assert_num_queries(FIRES_PAGE_QUERIES):
        many = api.get("/v1/fires")
    assert (len(few.json()["results"]), len(many.json()["results"])) == (2, 22)


def test_it_lists_a_sessions_fires_in_a_fixed_number_of_queries(api, workspace, django_assert_num_queries):
    session = session_create(workspace=workspace, title="asked")
    given_fires(workspace, 1, session=session)
    api.get(f"/v1/fires?session={session.pk}")  # the key's use is written once a minute: not counted below
    with django_assert_num_queries(FIRES_PAGE_QUERIES + 1):  # and the session named by ?session=
        few = api.get(f"/v1/fires?session={session.pk}")
    given_fires(workspace, 10, session=session)
    with django_assert_num_queries(FIRES_PAGE_QUERIES + 1):
        many = api.get(f"/v1/fires?session={session.pk}")
    assert (len(few.json()["results"]), len(many.json()["results"])) == (1, 11)
