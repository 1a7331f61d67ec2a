"""GET /v1/traces, /v1/traces/{id} and /v1/usage: span trees, counts per actor, tokens and cost per
trace and per day, each workspace seeing only its own."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from fathom.llm import Message, ToolSpec, complete
from fathom.llm.errors import LLMAuthenticationError
from fathom.llm.scripted import Script
from fathom.tracing import span
from fathom.tracing.models import TraceEvent

SEARCH = ToolSpec("search", "Search", {"type": "object", "properties": {"query": {"type": "string"}}})


@pytest.fixture
def priced(workspace):
    script = Script.install(workspace, input_price_per_mtok=2, output_price_per_mtok=10)
    yield script
    script.reset()


# The fire's two answered calls at $2 / $10 per million input / output tokens.
FIRE_COST = f"{(Decimal(100 * 2 + 10 * 10) + Decimal(200 * 2 + 20 * 10)) / 1_000_000:.8f}"


def a_fire(workspace, script, actor="fire:1"):
    """A prompt, a model call asking for a tool, the tool, a failing verifier call, a final answer."""
    script.reply(tool_calls=[{"id": "t1", "name": "search", "arguments": {"query": "q"}}], input_tokens=100,
                 output_tokens=10)
    script.fail("authentication", "bad key")
    script.reply("answer", input_tokens=200, output_tokens=20, cached_tokens=50)
    with span("trace.prompt", workspace=workspace, actor_id=actor, run_id="run-1") as root:
        first = complete(workspace=workspace, role="main", messages=[Message.user("q")], tools=[SEARCH])
        with span("worker.tool", call_id=first.tool_calls[0].id, tool="search") as tool:
            tool.set(result="2 rows")
        with pytest.raises(LLMAuthenticationError):
            complete(workspace=workspace, role="verifier", messages=[Message.user("check")], actor_id="verifier")
        complete(workspace=workspace, role="main", messages=[Message.user("q")])
    return root


def test_a_trace_reads_back_as_a_span_tree_with_model_calls_per_actor_and_totals(workspace, api, priced):
    root = a_fire(workspace, priced)

    response = api.get(f"/v1/traces/{root.trace_id}")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["trace_id"] == root.trace_id and body["status"] == "ok"
    [prompt] = body["spans"]
    assert (prompt["name"], prompt["span_id"], prompt["parent_span_id"]) == ("trace.prompt", root.span_id, "")
    children = prompt["children"]
    assert [c["name"] for c in children] == ["llm.call", "worker.tool", "llm.call", "llm.call"]
    assert {c["parent_span_id"] for c in children} == {root.span_id}
    assert [c["status"] for c in children] == ["ok", "ok", "error", "ok"]
    assert children[1]["call_id"] == "t1" and children[1]["attributes"]["result"] == "2 rows"
    assert "bad key" in children[2]["error"] and children[2]["actor_id"] == "verifier"
    assert children[3]["cached_tokens"] == 50 and children[3]["provider"] == "scripted"

    assert body["totals"] == {"spans": 5, "model_calls": 3, "failed_model_calls": 1, "tool_calls": 1,
                              "input_tokens": 300, "output_tokens": 30, "cached_tokens": 50,
                              "cost": FIRE_COST}
    assert body["actors"] == [
        {"actor_id": "fire:1", "model_calls": 2, "failed_model_calls": 0, "input_tokens": 300, "output_tokens": 30,
         "cached_tokens": 50, "cost": FIRE_COST},
        {"actor_id": "verifier", "model_calls": 1, "failed_model_calls": 1, "input_tokens": 0, "output_tokens": 0,
         "cached_tokens": 0, "cost": "0.00000000"},
    ]


def test_a_retry_shows_as_an_event_inside_its_model_call(workspace, api, scripted_llm, settings):
    settings.FATHOM_LLM_BACKOFF_SECONDS = 0.01
    scripted_llm.fail("rate_limited", "slow down", retry_after=0).reply("ok")

    completion = complete(workspace=workspace, role="main", messages=[Message.user("x")])

    [call] = api.get(f"/v1/traces/{completion.trace_id}").json()["spans"]
    assert [e["kind"] for e in call["events"]] == ["llm.call.retry"]
    assert call["events"][0]["payload"]["http_status"] == 429 and call["attributes"]["attempts"] == 2


def test_an_unknown_trace_is_a_404_that_says_so(api):
    response = api.get("/v1/traces/0123456789abcdef0123456789abcdef")

    assert response.status_code == 404
    assert "no trace" in response.json()["error"]["message"]


def test_traces_are_listed_newest_first_one_row_each_with_counts(workspace, api, priced,
                                                                 django_assert_max_num_queries):
    older = a_fire(workspace, priced, actor="fire:old")
    priced.reply("alone", input_tokens=5, output_tokens=1)
    lone = complete(workspace=workspace, role="main", messages=[Message.user("x")])

    with django_assert_max_num_queries(6):  # auth (key, workspace, last-used), the page, its totals
        response = api.get("/v1/traces")

    rows = response.json()["results"]
    assert [r["trace_id"] for r in rows] == [lone.trace_id, older.trace_id]
    assert rows[0]["name"] == "llm.call" and rows[0]["model_calls"] == 1 and rows[0]["input_tokens"] == 5
    assert rows[1] | {"started_at": None, "ended_at": None} == {
        "trace_id": older.trace_id, "name": "trace.prompt", "actor_id": "fire:old", "run_id": "run-1",
        "status": "error", "spans": 5, "model_calls": 3, "failed_model_calls": 1, "tool_calls": 1,
        "input_tokens": 300, "output_tokens": 30, "cached_tokens": 50, "cost": FIRE_COST,
        "started_at": None, "ended_at": None}
    assert api.get("/v1/traces", {"actor_id": "fire:old"}).json()["results"][0]["trace_id"] == older.trace_id
    assert api.get("/v1/traces", {"run_id": "nope"}).json()["results"] == []


def test_usage_is_rolled_up_per_day_with_role_and_model_lines(workspace, api, priced):
    a_fire(workspace, priced)
    priced.reply("yesterday", input_tokens=1000, output_tokens=100)
    old = complete(workspace=workspace, role="writer", messages=[Message.user("x")])
    yesterday = timezone.now() - timedelta(days=1)
    TraceEvent.objects.filter(trace_id=old.trace_id).update(at=yesterday)
    today = timezone.now().date()

    body = api.get("/v1/usage").json()

    assert [d["day"] for d in body["days"]] == [str(yesterday.date()), str(today)]
    day_before, day = body["days"]
    assert (day_before["calls"], day_before["input_tokens"], day_before["cost"]) == (1, 1000, "0.00300000")
    assert day_before["by_model"] == [{"role": "writer", "provider": "scripted", "model": priced.name, "calls": 1,
                                       "failed": 0, "input_tokens": 1000, "output_tokens": 100, "cached_tokens": 0,
                                       "cost": "0.00300000"}]
    assert (day["calls"], day["failed"], day["input_tokens"], day["output_tokens"]) == (3, 1, 300, 30)
    assert [(m["role"], m["calls"], m["failed"]) for m in day["by_model"]] == [("main", 2, 0), ("verifier", 1, 1)]
    assert body["totals"]["calls"] == 4 and body["totals"]["input_tokens"] == 1300

    only_today = api.get("/v1/usage", {"from": str(today), "to": str(today)}).json()
    assert [d["day"] for d in only_today["days"]] == [str(today)] and only_today["totals"]["calls"] == 3


@pytest.mark.parametrize("query, message", [
    ({"from": "2026-02-30"}, "from"),
    ({"from": "2026-03-02", "to": "2026-03-01"}, "must not be after"),
    ({"from": "2020-01-01", "to": "2026-01-01"}, "at most 366 days"),
])
def test_bad_usage_ranges_are_refused_with_a_message(api, query, message):
    response = api.get("/v1/usage", query)

    assert response.status_code == 400
    assert message in response.json()["error"]["message"]


def test_another_workspace_sees_none_of_the_usage(workspace, other_workspace, api_client_for, priced):
    a_fire(workspace, priced)

    body = api_client_for(other_workspace, "viewer").get("/v1/usage").json()

    assert body["days"] == [] and body["totals"]["calls"] == 0
