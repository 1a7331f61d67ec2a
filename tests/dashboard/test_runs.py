"""The runs page (the workspace's fires, filtered and paginated, and its conductor runs), a conductor
run's page (plan, graph, calls, research fires, Cancel), a research fire shown as its run's, and the
loop view rendered as HTML, through Django's test client."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fathom.tracing.models import TraceEvent
from harness.conductor.models import Run
from harness.conductor.services import run_create
from harness.fires.models import Fire
from harness.fires.services import fire_create
from lake.models import Delta
from tests.dashboard.support import fire_with_tools, member
from tests.harness.conductor.conftest import conductor_script, driver, main_script  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client, workspace):
    client.force_login(member(workspace))
    return client


def fire_rows(page: str) -> list[str]:
    """The fire ids of the runs page's rows, in order."""
    return re.findall(r'id="fire-row-([0-9a-f-]+)"', page)


def a_fire(workspace, question: str, **fields) -> Fire:
    fire = fire_create(workspace=workspace, mode=fields.pop("mode", "reactive"), question=question)
    if fields:
        Fire.objects.filter(pk=fire.pk).update(**fields)
    return fire


def three_steps_scripted(conductor_script, main_script) -> None:  # noqa: F811
    """The conductor's agenda of three research items, the third after the first two, and its answer;
    each research fire's answer."""
    conductor_script.call_tool("set_agenda", {"items": [
        {"capability": "researcher", "task": "the rover's route"},
        {"capability": "researcher", "task": "the dunes' heights"},
        {"capability": "researcher", "task": "the route over the dunes", "depends_on": [1, 2]}]})
    conductor_script.call_tool("complete", {"answer": "North, then over the low dunes."})
    for body in ("It went north.", "The dunes are low.", "North, then over the low dunes."):
        main_script.call_tool("respond", {"body": body})
        main_script.call_tool("skip", {})


def three_step_run(workspace, driver, conductor_script, main_script) -> Run:  # noqa: F811
    """A completed run of three research items, the third after the first two."""
    three_steps_scripted(conductor_script, main_script)
    run = run_create(workspace=workspace, objective="Map the rover's route across the dunes")
    driver.drain()
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED, run.answer
    return run


# --- the runs page -------------------------------------------------------------------------------------------

def test_the_runs_page_lists_fires_newest_first_with_their_trace_usage_and_loop_view(operator, scripted_llm,
                                                                                     workspace):
    older = fire_with_tools(scripted_llm, workspace, question="what about the rover?")
    newer = a_fire(workspace, "and the dunes?")
    page = operator.get("/runs/").content.decode()
    assert '<a href="/runs/">Runs</a>' in page  # in the navigation
    assert fire_rows(page) == [str(newer.pk), str(older.pk)]
    row = page[page.index(f'id="fire-row-{older.pk}"'):page.index("</tr>", page.index(f'id="fire-row-{older.pk}"'))]
    calls = TraceEvent.objects.filter(trace_id=older.trace_id, name="llm.call").exclude(status="")
    assert calls.count() >= 2 and f'<td class="num">{calls.count()}</td>' in row  # the trace's, not the loop's
    assert f'href="/loop/{older.pk}"' in row and " s</td>" in row  # its loop view, its duration


def test_the_filters_narrow_the_fires(operator, workspace):
    plain = a_fire(workspace, "where is the rover?")
    failed = a_fire(workspace, "why did it stop?", status="failed", stop_reason="error", error="boom")
    capped = a_fire(workspace, "the dunes at night", status="finished", stop_reason="max_turns")
    sit = a_fire(workspace, "what presses most", mode="self_directing")

    def shown(**params) -> set[str]:
        response = operator.get("/runs/", params)
        assert response.status_code == 200, params
        return set(fire_rows(response.content.decode()))

    assert shown() == {str(f.pk) for f in (plain, failed, capped, sit)}
    assert shown(mode="self_directing") == {str(sit.pk)}
    assert shown(status="failed") == {str(failed.pk)}
    assert shown(stop="max_turns") == {str(capped.pk)}
    assert shown(errored="on") == {str(failed.pk)}
    assert shown(q="ROVER") == {str(plain.pk)}  # any case
    assert shown(q="the dunes", status="finished") == {str(capped.pk)}
    assert "No fire matches these filters." in operator.get("/runs/", {"q": "no such words"}).content.decode()


def test_the_runs_page_is_paginated_and_bad_input_is_a_4xx(operator, workspace):
    fires = [a_fire(workspace, f"question {n}") for n in range(30)]
    first = operator.get("/runs/").content.decode()
    second = operator.get("/runs/", {"page": 2}).content.decode()
    assert len(fire_rows(first)) == 25 and len(fire_rows(second)) == 5
    assert set(fire_rows(first)) | set(fire_rows(second)) == {str(f.pk) for f in fires}
    assert 'href="?page=2" rel="next"' in first and "page 2 of 2" in second
    # a filter is kept when paging
    assert 'href="?q=question&amp;page=2"' in operator.get("/runs/", {"q": "question"}).content.decode()
    assert operator.get("/runs/", {"page": 3}).status_code == 404
    for bad in ({"mode": "bogus"}, {"status": "exploded"}, {"stop": "why"}, {"page": "abc"}, {"page": 0},
                {"runs_page": "-1"}, {"q": "x" * 201}, {"errored": "maybe"}):
        response = operator.get("/runs/", bad)
        assert response.status_code == 400, bad
        assert "Not a filter this page knows" in response.content.decode(), bad
    assert "&#x27;maybe&#x27; is not a value of this box" in operator.get("/runs/", {"errored": "maybe"}).content.decode()
    assert operator.get("/runs/", {"errored": ""}).status_code == 200
    assert operator.get("/runs/", {"q": "nul\x00"}).status_code == 400  # refused before any view


def test_the_runs_page_costs_the_same_queries_whatever_it_shows(operator, workspace):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert operator.get("/runs/").status_code == 200
        return len(captured)

    a_fire(workspace, "the first question")
    run_create(workspace=workspace, objective="the first objective")
    few = queries()
    for n in range(30):
        a_fire(workspace, f"question {n}")
    for n in range(12):
        run_create(workspace=workspace, objective=f"objective {n}")
    assert queries() == few


def test_another_workspaces_fires_and_runs_are_never_shown(operator, workspace, other_workspace):
    mine = a_fire(workspace, "my own question")
    theirs = a_fire(other_workspace, "their secret question")
    run = run_create(workspace=other_workspace, objective="their secret objective")
    page = operator.get("/runs/").content.decode()
    assert fire_rows(page) == [str(mine.pk)]
    assert "their secret" not in page
    for path in (f"/runs/{run.pk}", f"/loop/{theirs.pk}", "/runs/not-a-uuid"):
        response = operator.get(path)
        assert response.status_code == 404, path
        assert "their secret" not in response.content.decode()
    assert operator.post(f"/runs/{run.pk}/cancel").status_code == 404
    run.refresh_from_db()
    assert run.status == Run.Status.ACCEPTED


# --- a conductor run ---------------------------------------------------------------------------------------------

def test_a_conductor_run_has_its_page_with_plan_graph_calls_and_research_fires(
        operator, workspace, driver, conductor_script, main_script):  # noqa: F811
    run = three_step_run(workspace, driver, conductor_script, main_script)
    listed = operator.get("/runs/").content.decode()
    row = listed[listed.index(f'id="run-row-{run.pk}"'):]
    assert f'href="/runs/{run.pk}"' in row and "completed" in row and "3 researchers" in row and "3/3" in row

    page = operator.get(f"/runs/{run.pk}").content.decode()
    assert "North, then over the low dunes." in page and "completed" in page
    # the graph: the conductor and three items, item 3 after items 1 and 2
    assert page.count('<g class="node') == 4
    edges = set(re.findall(r'data-from="(\d+)" data-to="(\d+)"', page))
    assert edges == {("0", "1"), ("0", "2"), ("1", "3"), ("2", "3")}
    # each research fire is a link to its loop view, from the graph and the plan
    fires = list(run.calls.order_by("item__number").values_list("fire_id", flat=True))
    assert len(fires) == 3 and all(fires)
    for fire_id in fires:  # from the graph, the plan, and each of its calls in the trace (its main and review)
        assert page.count(f'href="/loop/{fire_id}"') >= 4
    # every model call of its trace: the conductor's bootstrap and decision and the fires' calls
    calls = TraceEvent.objects.filter(trace_id=run.trace_id, name="llm.call").exclude(status="")
    assert page.count('class="trace-call kind-model"') == calls.count() >= 5
    assert "model: conductor" in page and "model: main" in page
    assert 'action="/runs/' not in page  # a finished run has no Cancel


def test_a_running_run_has_cancel_and_the_operator_cancels_it_from_its_page(operator, workspace, driver):  # noqa: F811
    run = run_create(workspace=workspace, objective="Map the rover's route")
    assert f'href="/runs/{run.pk}"' in operator.get("/").content.decode()  # from the panel beside the feed
    page = operator.get(f"/runs/{run.pk}").content.decode()
    assert f'action="/runs/{run.pk}/cancel"' in page and 'hx-trigger="every 2s"' in page  # it updates itself
    response = operator.post(f"/runs/{run.pk}/cancel", {"next": f"/runs/{run.pk}"})
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}"
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED
    page = operator.get(f"/runs/{run.pk}").content.decode()
    assert "cancelled" in page and "every 2s" not in page


def test_a_research_fire_shows_as_its_runs_on_the_feed_the_loop_view_and_the_runs_page(
        operator, workspace, driver, conductor_script, main_script):  # noqa: F811
    run = three_step_run(workspace, driver, conductor_script, main_script)
    call = run.calls.select_related("fire").get(item__number=1)
    link = f'<a class="run-link" href="/runs/{run.pk}">conductor run {str(run.pk)[:8]}</a>, item 1 (researcher)'
    feed = operator.get("/").content.decode()
    card = feed[feed.index(f'id="fire-{call.fire_id}"'):]
    card = card[:card.index("</li>")]
    assert link in card and "Conductor research" in card and "Reactive" not in card and ">user<" not in card
    # and its card counts its own calls, not its whole run's
    own = TraceEvent.objects.filter(run_id=str(call.fire_id), name="llm.call").exclude(status="").count()
    assert own < TraceEvent.objects.filter(trace_id=run.trace_id, name="llm.call").exclude(status="").count()
    assert f"{own} model call{'s' if own != 1 else ''} (" in card
    loop = operator.get(f"/loop/{call.fire_id}").content.decode()
    assert link in loop and "Conductor research" in loop
    assert "<tr><td>main</td><td>1</td>" in loop  # its own calls by role, not its run's three
    assert 'class="trace"' in loop and "conductor.bootstrap" not in loop  # its own part of the run's trace
    listed = operator.get("/runs/").content.decode()
    assert listed.count('class="run-link"') == 3


# --- the loop view ---------------------------------------------------------------------------------------------

def test_the_loop_view_renders_the_response_review_writes_and_work_set_as_html(operator, scripted_llm, workspace):
    cited = Delta.objects.create(workspace=workspace, content="the rover's log", tags=["kind:note"])
    fire = fire_with_tools(scripted_llm, workspace)
    fire.response = {**fire.response, "body": f"It went north [{cited.pk}].", "cited_ids": [cited.pk],
                     "attestation": "I read logs well."}
    fire.review = {"outcome": "proposed", "results": ['{"outcome": "proposed", "proposal_id": 7, "level": 1}']}
    fire.save(update_fields=["response", "review"])
    loop = operator.get(f"/loop/{fire.pk}").content.decode()
    response = loop[loop.index("<h2>Response</h2>"):loop.index("<h2>Trace</h2>")]
    assert "<pre>" not in response  # readable, not JSON dumps
    assert response.count(f'href="/lake/{cited.pk}"') == 2  # in the body and in the cited ids
    assert "<dt>Attestation</dt><dd><p>I read logs well.</p></dd>" in response
    assert '<a href="/proposals/7">proposal #7</a>' in response  # the review pass's proposal
    writes = fire.writes
    written = writes["card"]
    assert f'<a class="cited" href="/lake/{written}"><code>{written}</code></a>' in response  # a write's id
    assert "<th scope=\"col\">Message</th>" in response and "what about the rover?" in response  # the work set
