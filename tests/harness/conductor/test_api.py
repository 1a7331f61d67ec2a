"""REST of conductor runs: POST /v1/runs answers 202 with the run's id before anything runs; the run,
its graph (with the model calls per actor), its events as JSON; cancel; roles."""

import pytest

from fathom.tracing.models import TraceEvent
from harness.conductor.models import Run

pytestmark = pytest.mark.django_db


def test_a_run_is_accepted_with_its_id_then_read_with_its_graph_and_events(api, driver):
    response = api.post("/v1/runs", {"objective": "whats tech news today"}, format="json")
    assert response.status_code == 202, response.content
    run_id = response.json()["id"]
    assert response.json()["status"] == "accepted" and driver.pending == [("step", run_id)]
    driver.drain()

    body = api.get(f"/v1/runs/{run_id}").json()
    assert body["status"] == "completed" and body["answer"].startswith("[offline]")
    assert [(i["number"], i["capability"], i["state"]) for i in body["agenda"]] == [(1, "researcher", "done")]
    assert [d["kind"] for d in body["decisions"]] == ["bootstrap", "decide"]
    assert body["calls"][0]["worker"] == "researcher" and body["calls"][0]["model_calls"] >= 1

    graph = api.get(f"/v1/runs/{run_id}/graph").json()
    assert graph["tree"]["kind"] == "prompt" and graph["tree"]["objective"] == "whats tech news today"
    conductor = graph["tree"]["children"][0]
    assert conductor["kind"] == "conductor" and conductor["model_calls"] == 2
    assert [w["kind"] for w in conductor["children"]] == ["worker"]
    assert {a["actor_id"]: a["model_calls"] for a in graph["actors"]}[f"conductor:{run_id}"] == 2

    events = api.get(f"/v1/runs/{run_id}/events").json()
    kinds = [e["kind"] for e in events["events"]]
    assert kinds == ["RunAccepted", "AgendaSet", "CapabilityCallDispatched", "CapabilityCallFinished",
                     "DecisionMade", "RunFinished"]
    assert [e["seq"] for e in events["events"]] == list(range(1, 7)) and events["next"] == "?after=6"
    assert [e["kind"] for e in api.get(f"/v1/runs/{run_id}/events?after=4").json()["events"]] == kinds[4:]

    assert [r["id"] for r in api.get("/v1/runs").json()["results"]] == [run_id]


def test_cancel_stops_a_run_and_is_harmless_on_a_finished_one(api, driver):
    run_id = api.post("/v1/runs", {"objective": "news"}, format="json").json()["id"]
    cancelled = api.post(f"/v1/runs/{run_id}/cancel")
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
    driver.drain()
    assert Run.objects.get(pk=run_id).status == "cancelled"
    assert api.post(f"/v1/runs/{run_id}/cancel").json()["status"] == "cancelled"


def test_a_viewer_may_read_runs_but_not_start_or_cancel_them(api, api_client_for, workspace, driver):
    run_id = api.post("/v1/runs", {"objective": "news"}, format="json").json()["id"]
    viewer = api_client_for(workspace, "viewer")
    assert viewer.get(f"/v1/runs/{run_id}").status_code == 200
    assert viewer.get(f"/v1/runs/{run_id}/graph").status_code == 200
    assert viewer.post("/v1/runs", {"objective": "news"}, format="json").status_code == 403
    assert viewer.post(f"/v1/runs/{run_id}/cancel").status_code == 403


@pytest.mark.parametrize("body", [{}, {"objective": ""}, {"objective": "   "}, {"objective": None}, {"objective": ["x"]},
                                  {"objective": "x" * 20_001}])
def test_a_bad_objective_is_a_400(api, body):
    response = api.post("/v1/runs", body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()["error"]) == {"code", "message", "details"}
    assert not Run.objects.exists()


@pytest.mark.parametrize("path", ["/v1/runs/{id}", "/v1/runs/{id}/graph", "/v1/runs/{id}/events"])
@pytest.mark.parametrize("run_id", ["nope", "00000000-0000-0000-0000-000000000000", "1"])
def test_an_unknown_run_is_a_404(api, path, run_id):
    assert api.get(path.format(id=run_id)).status_code == 404
    assert api.post(f"/v1/runs/{run_id}/cancel").status_code == 404


def test_bad_event_parameters_are_a_400(api, driver):
    run_id = api.post("/v1/runs", {"objective": "news"}, format="json").json()["id"]
    assert api.get(f"/v1/runs/{run_id}/events?after=x").status_code == 400
    assert api.get(f"/v1/runs/{run_id}/events?limit=x").status_code == 400


def test_a_research_fires_rest_view_holds_its_own_part_of_its_runs_trace(api, api_client_for, other_workspace,
                                                                         driver):
    # given a run with no key: the conductor's bootstrap and decision, and its research fire's two turns and review
    run_id = api.post("/v1/runs", {"objective": "whats tech news today"}, format="json").json()["id"]
    driver.drain()
    run = Run.objects.get(pk=run_id)
    fire_id = str(run.calls.get().fire_id)
    in_run = TraceEvent.objects.filter(trace_id=run.trace_id)
    assert in_run.filter(name="conductor.bootstrap").exists()

    body = api.get(f"/v1/fires/{fire_id}").json()

    # then its trace and its calls by role are its own (its run id), not the conductor's
    assert body["trace_id"] == run.trace_id
    assert len(body["trace"]) == in_run.filter(run_id=fire_id).count() < in_run.count()
    assert not {"conductor.bootstrap", "conductor.decide"} & {event["name"] for event in body["trace"]}
    assert {role: row["calls"] for role, row in body["calls_by_role"].items()} == {"main": 2, "review": 1}
    # and another workspace cannot read it
    response = api_client_for(other_workspace).get(f"/v1/fires/{fire_id}")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
