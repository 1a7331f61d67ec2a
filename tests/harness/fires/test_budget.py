"""The ceiling on model calls per trace, seen from a fire: a fire that keeps calling tools past it
fails with budget_exceeded (on the fire and on its trace), without the call past the ceiling being
made; a fire under the ceiling is untouched."""

import uuid

import pytest

from fathom.celery import app
from fathom.llm import Message, complete
from fathom.llm.budget import budget_used
from fathom.tracing import span
from fathom.tracing.models import TraceEvent
from harness.fires.models import Fire
from harness.fires.services import fire_create, fire_run
from harness.runtime.models import SessionEvent
from harness.runtime.services import harness_settings_get, message_send
from lake.models import Delta
from tests.conftest import wait_for
from tests.harness.support import session_tick


@pytest.fixture
def endless(scripted_llm, workspace):
    """A fire that never responds: its model asks for a plan, again and again (far past the turn cap)."""
    limits = harness_settings_get(workspace_id=workspace.pk)
    limits.max_turns_per_fire = 50
    limits.save()
    for n in range(12):
        scripted_llm.call_tool("plan", {"question": "q", "steps": [f"step {n}"]}, id=f"p{n}")
    return scripted_llm


def budget_failures(trace_id: str) -> list[TraceEvent]:
    return list(TraceEvent.objects.filter(trace_id=trace_id, kind="llm.call.failed", payload__code="budget_exceeded"))


@pytest.mark.parametrize("setting, ceiling, scope", [
    ("FATHOM_LLM_MAX_CALLS_PER_TRACE", 5, "FATHOM_LLM_MAX_CALLS_PER_TRACE"),
    ("FATHOM_LLM_MAX_CALLS_PER_ROLE", {"main": 4, "planner": 1}, "FATHOM_LLM_MAX_CALLS_PER_ROLE allows main"),
])
def test_a_fire_that_keeps_calling_tools_past_the_ceiling_fails_with_budget_exceeded(
        setting, ceiling, scope, endless, workspace, settings):
    # given a ceiling of 5 model calls per trace, or of 4 `main` calls
    setattr(settings, setting, ceiling)
    fire = fire_create(workspace=workspace, mode="introspective", question="loop")
    # when the fire runs
    fire = fire_run(fire_id=fire.pk)
    # then it made its share of calls and failed on the next one, which was not made
    made = ceiling if isinstance(ceiling, int) else ceiling["main"]
    assert (fire.status, fire.stop_reason, fire.model_calls) == ("failed", "budget_exceeded", made)
    assert fire.error.startswith("budget_exceeded: ") and scope in fire.error
    assert len(endless.sent) == made and endless.pending == 12 - made
    # and its trace says so, on the call that was refused
    [refused] = budget_failures(fire.trace_id)
    assert refused.payload["role"] == "main" and refused.status == "error" and scope in refused.error
    root = TraceEvent.objects.get(trace_id=fire.trace_id, kind="trace.prompt.failed")
    assert "LLMBudgetExceeded" in root.error


def test_a_session_turn_whose_fire_exceeds_the_ceiling_fails(endless, session, settings):
    settings.FATHOM_LLM_MAX_CALLS_PER_TRACE = 3
    message_send(session=session, content="loop")
    assert session_tick(session_id=session.pk) == "failed"
    fire = Fire.objects.get(session=session)
    assert (fire.status, fire.stop_reason, fire.model_calls) == ("failed", "budget_exceeded", 3)
    failure = SessionEvent.objects.get(session=session, kind="TurnFailure")
    assert "budget_exceeded" in failure.data["error"]
    assert len(endless.sent) == 3


def test_a_fire_under_the_ceiling_is_untouched(scripted_llm, workspace, settings):
    settings.FATHOM_LLM_MAX_CALLS_PER_TRACE = 3  # exactly what it needs: main, main, review
    settings.FATHOM_LLM_MAX_CALLS_PER_ROLE = {"main": 3}
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    scripted_llm.call_tool("plan", {"question": "q", "steps": ["s"]})
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "done"}}]).call_tool("skip")
    fire = fire_run(fire_id=fire.pk)
    assert (fire.status, fire.stop_reason, fire.model_calls) == ("finished", "responded", 3)
    assert fire.review["outcome"] == "skip" and not budget_failures(fire.trace_id)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_count_holds_across_the_processes_of_a_trace(scripted_llm, workspace, workers, settings):
    # given a trace that has made its 2 calls here, and a worker process with the same ceiling
    settings.FATHOM_LLM_MAX_CALLS_PER_TRACE = 2
    queue = f"quality-budget-{uuid.uuid4().hex[:6]}"
    workers([queue], env={"FATHOM_LLM_MAX_CALLS_PER_TRACE": "2"})
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    Fire.objects.filter(pk=fire.pk).update(status="finished", phase="done", response={"body": "an answer"})
    scripted_llm.reply("one").reply("two").reply('{"salience": 1}')
    with span("trace.prompt", workspace=workspace, actor_id=f"fire:{fire.pk}") as root:
        for _ in range(2):
            complete(workspace=workspace, role="main", messages=[Message.user("q")])
        # when the trace goes on in the worker (the judge, enqueued inside the trace)
        app.send_task("quality.fire_judge_axes", args=[str(fire.pk)], queue=queue)

    # then the worker's call is refused as the third of the trace: recorded there, not made
    [refused] = wait_for(lambda: budget_failures(root.trace_id), timeout=30)
    assert refused.task_id and refused.payload["role"] == "judge"
    assert "FATHOM_LLM_MAX_CALLS_PER_TRACE" in refused.error
    assert scripted_llm.pending == 1 and len(scripted_llm.sent) == 2
    assert budget_used(trace_id=root.trace_id) == {"*": 2, "main": 2}
    assert not Delta.objects.filter(tags__contains=["kind:judge-axes"]).exists()
