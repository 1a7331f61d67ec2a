"""The ceiling on model calls per trace (fathom.llm.budget), in the model layer: in all and per
role, counted in Redis by trace id, refused calls not made and recorded on the trace as
budget_exceeded; calls under the ceiling, and calls outside any trace, unaffected."""

import subprocess
import sys

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured

from fathom.env import env_int_map
from fathom.llm import Message, complete
from fathom.llm import budget as budget_module
from fathom.llm.budget import budget_used
from fathom.llm.errors import LLMBudgetExceeded
from fathom.tracing import span
from fathom.tracing.models import TraceEvent
from tests.conftest import REPO_ROOT

Q = [Message.user("q")]


def test_past_the_total_the_call_is_not_made_and_the_trace_records_budget_exceeded(workspace, scripted_llm, settings):
    settings.FATHOM_LLM_MAX_CALLS_PER_TRACE = 3
    for n in range(5):
        scripted_llm.reply(f"answer {n}")
    with span("trace.prompt", workspace=workspace, actor_id="fire:1") as root:
        answers = [complete(workspace=workspace, role=role, messages=Q).text for role in ("main", "planner", "main")]
        with pytest.raises(LLMBudgetExceeded) as refused:
            complete(workspace=workspace, role="verifier", messages=Q)
        with pytest.raises(LLMBudgetExceeded):
            complete(workspace=workspace, role="main", messages=Q, stream=lambda chunk: None)

    assert answers == ["answer 0", "answer 1", "answer 2"]
    assert scripted_llm.pending == 2 and len(scripted_llm.sent) == 3  # the refused calls were not made
    assert budget_used(trace_id=root.trace_id) == {"*": 3, "main": 2, "planner": 1}  # and counted nothing
    error = refused.value
    assert (error.code, error.status_code, error.retryable) == ("budget_exceeded", 429, False)
    assert error.details | {"trace_id": root.trace_id, "role": "verifier", "scope": "trace", "limit": 3} == error.details
    assert "made 3 model calls" in error.message and "FATHOM_LLM_MAX_CALLS_PER_TRACE" in error.message
    failed = TraceEvent.objects.filter(trace_id=root.trace_id, kind="llm.call.failed").order_by("at", "id")
    assert [(e.payload["role"], e.payload["code"], e.status) for e in failed] == [
        ("verifier", "budget_exceeded", "error"), ("main", "budget_exceeded", "error")]
    assert "LLMBudgetExceeded" in failed[0].error


def test_a_role_past_its_own_ceiling_is_refused_while_the_others_go_on(workspace, scripted_llm, settings):
    settings.FATHOM_LLM_MAX_CALLS_PER_ROLE = {"writer": 2}
    for n in range(4):
        scripted_llm.reply(f"answer {n}")
    with span("trace.prompt", workspace=workspace) as root:
        complete(workspace=workspace, role="writer", messages=Q)
        complete(workspace=workspace, role="writer", messages=Q)
        with pytest.raises(LLMBudgetExceeded) as refused:
            complete(workspace=workspace, role="writer", messages=Q)
        assert complete(workspace=workspace, role="main", messages=Q).text == "answer 2"
    assert refused.value.details["scope"] == "role" and refused.value.details["limit"] == 2
    assert "2 writer model calls" in refused.value.message and "FATHOM_LLM_MAX_CALLS_PER_ROLE" in refused.value.message
    assert budget_used(trace_id=root.trace_id) == {"*": 3, "writer": 2, "main": 1}
    assert scripted_llm.pending == 1


def test_each_trace_has_its_own_count_and_calls_outside_a_trace_are_not_counted(workspace, scripted_llm, settings):
    settings.FATHOM_LLM_MAX_CALLS_PER_TRACE = 1
    for n in range(4):
        scripted_llm.reply(f"answer {n}")
    first = complete(workspace=workspace, role="main", messages=Q)  # each a trace of its own
    second = complete(workspace=workspace, role="main", messages=Q)
    for _ in range(2):
        with span("trace.prompt", workspace=workspace):
            complete(workspace=workspace, role="main", messages=Q)
    assert first.trace_id != second.trace_id and budget_used(trace_id=first.trace_id) == {}
    assert scripted_llm.pending == 0


def test_with_no_ceiling_nothing_is_counted(workspace, scripted_llm, settings):
    settings.FATHOM_LLM_MAX_CALLS_PER_TRACE = 0
    scripted_llm.reply("a").reply("b")
    with span("trace.prompt", workspace=workspace) as root:
        complete(workspace=workspace, role="main", messages=Q)
        complete(workspace=workspace, role="main", messages=Q)
    assert budget_used(trace_id=root.trace_id) == {}


def test_without_redis_the_call_goes_on_uncounted(workspace, scripted_llm, settings, monkeypatch, tmp_path, caplog):
    # the scripted model keeps its own Redis; only the budget's client points at a socket nobody serves
    monkeypatch.setattr(budget_module, "get_redis", lambda: redis.Redis(
        unix_socket_path=str(tmp_path / "gone.sock"), socket_connect_timeout=1))
    settings.FATHOM_LLM_MAX_CALLS_PER_TRACE = 1
    scripted_llm.reply("a").reply("b")
    with span("trace.prompt", workspace=workspace):
        complete(workspace=workspace, role="main", messages=Q)
        assert complete(workspace=workspace, role="main", messages=Q).text == "b"
    assert "not checked: Redis is unreachable" in caplog.text


def test_the_per_role_setting_is_parsed_and_a_malformed_one_stops_start_up(monkeypatch, tmp_path):
    monkeypatch.setenv("X_MAP", " writer = 16, main=48 ")
    assert env_int_map("X_MAP", {}, minimum=1) == {"writer": 16, "main": 48}
    for bad, says in (("writer", "key=number pairs"), ("writer=many", "integer"), ("writer=0", "at least 1"),
                      ("=3", "key=number pairs")):
        monkeypatch.setenv("X_MAP", bad)
        with pytest.raises(ImproperlyConfigured, match=says):
            env_int_map("X_MAP", {}, minimum=1)
    for name, value in (("FATHOM_LLM_MAX_CALLS_PER_ROLE", "writer:16"), ("FATHOM_LLM_MAX_CALLS_PER_TRACE", "-1")):
        env = {"PATH": "/usr/bin:/bin", "FATHOM_DATA_DIR": str(tmp_path), name: value}
        result = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO_ROOT, env=env,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode != 0 and name in result.stderr
