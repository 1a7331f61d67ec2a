"""The planner step through REST: the `planner` role composes the steps when it has a model (the
scripted provider here); a plan it cannot use falls back to the default plan, and says so."""

import json
from datetime import timedelta

import pytest

from fathom.llm.scripted import Script
from fathom.tracing.models import TraceEvent
from tests.lake.conftest import T0


@pytest.fixture
def planner(workspace):
    script = Script.install(workspace, roles=("planner",))
    yield script
    script.reset()


def _search(api, query, **body):
    response = api.post("/v1/search", {"query": query, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _hits(result):
    return [row["id"] for row in result["rows"] if row["role"] == "hit"]


def test_without_a_planner_model_the_plan_is_one_hybrid_step(api, moments):
    moments("harbour crane inspection")

    result = _search(api, "harbour crane")

    assert result["plan"] == {"source": "default", "steps": [{"query": "harbour crane", "mode": "hybrid",
                                                              "filters": {}}]}
    assert result["warnings"] == []


def test_a_catch_all_model_does_not_turn_the_planner_on(api, workspace, moments):
    script = Script.install(workspace)  # "*": every role, but not the planner by name
    moments("harbour crane inspection")

    assert _search(api, "harbour crane")["plan"]["source"] == "default"
    assert script.sent == []


def test_the_planner_composes_steps_with_modes_tags_and_time_windows(api, planner, moments):
    (crane,) = moments("harbour crane inspection notes", tags=["kind:note", "site:harbour"])
    moments("harbour crane inspection notes", tags=["kind:note", "site:airport"])
    (old_budget,) = moments("budget for the new pier", tags=["kind:meeting"], start=T0 - timedelta(days=30))
    (budget,) = moments("budget for the new pier", tags=["kind:meeting"], start=T0 + timedelta(days=2))
    moments(*[f"unrelated moment {i}" for i in range(6)], start=T0 + timedelta(days=5))
    planner.reply(json.dumps({"steps": [
        {"query": "crane inspection", "mode": "vector", "tags": ["site:harbour"]},
        {"query": "pier budget", "mode": "text", "kind": "meeting", "since": (T0 - timedelta(days=1)).isoformat(),
         "until": None},
    ]}))

    result = _search(api, "what happened with the harbour crane and the pier money?", depth="shallow", limit=5)

    assert result["plan"]["source"] == "planner"
    assert [(s["query"], s["mode"]) for s in result["plan"]["steps"]] == [("crane inspection", "vector"),
                                                                         ("pier budget", "text")]
    assert result["plan"]["steps"][0]["filters"] == {"tags": ["site:harbour"]}
    assert set(_hits(result)) == {crane.id, budget.id}, result["rendered"]
    assert old_budget.id not in _hits(result)
    assert "plan planner (2 steps)" in result["rendered"]

    (sent,) = planner.sent
    assert sent.role == "planner" and sent.response_format["json_schema"]["name"] == "search_plan"
    assert sent.last_user_text == "what happened with the harbour crane and the pier money?"


def test_the_requests_filters_narrow_every_planned_step(api, planner, moments):
    moments("crane log", tags=["kind:note"])
    (wanted,) = moments("crane log", tags=["kind:note", "site:harbour"], start=T0 + timedelta(hours=1))
    planner.reply(json.dumps({"steps": [{"query": "crane"}, {"query": "log", "mode": "text"}]}))

    result = _search(api, "crane log", depth="shallow", filters={"tags": ["site:harbour"]})

    assert _hits(result) == [wanted.id]
    assert all(step["filters"] == {"tags": ["site:harbour"]} for step in result["plan"]["steps"])


@pytest.mark.parametrize("answer, reason", [
    ("not json at all", "not JSON"),
    (json.dumps({"steps": []}), "1 to 4 steps"),
    (json.dumps({"steps": [{"query": f"q{i}"} for i in range(5)]}), "1 to 4 steps"),
    (json.dumps({"steps": [{"query": "crane", "mode": "telepathy"}]}), "steps[0].mode"),
    (json.dumps({"steps": [{"query": "crane"}, {"query": "  "}]}), "steps[1].query is empty"),
    (json.dumps({"steps": [{"query": "crane", "since": "last tuesday"}]}), "steps[0].since"),
    (json.dumps({"steps": [{"query": "crane", "tags": ["two words"]}]}), "steps[0].tags"),
])
def test_a_malformed_plan_falls_back_to_the_default_plan_and_is_recorded(api, planner, moments, answer, reason):
    (crane,) = moments("harbour crane inspection")
    planner.reply(answer)

    result = _search(api, "harbour crane")

    assert result["plan"]["source"] == "default" and len(result["plan"]["steps"]) == 1
    assert reason in result["plan"]["note"]
    assert result["warnings"] == [result["plan"]["note"]]
    assert f"note: {result['plan']['note']}" in result["rendered"]
    assert _hits(result) == [crane.id]
    traced = TraceEvent.objects.get(kind="lake.plan.completed")
    assert traced.payload["source"] == "default" and reason in traced.payload["note"]


def test_a_failing_planner_falls_back_to_the_default_plan(api, planner, moments):
    (crane,) = moments("harbour crane inspection")
    planner.fail("authentication")

    result = _search(api, "harbour crane")

    assert result["plan"]["source"] == "default" and "the planner failed" in result["plan"]["note"]
    assert _hits(result) == [crane.id]
