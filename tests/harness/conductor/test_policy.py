"""The policy is the conductor's model boundary: pure (input -> typed output, nothing written but the
trace), its prompts carrying the runtime state and the routing guidance, and output it cannot use
returned as a typed error, never raised."""

import pytest

from fathom.tracing import span
from fathom.tracing.models import TraceEvent
from harness.conductor import policy
from harness.conductor.capabilities import RESEARCHER, TERMINAL
from harness.conductor.models import AgendaItem, Decision, Run

pytestmark = pytest.mark.django_db

BOTH = (RESEARCHER, TERMINAL)


def state(**overrides):
    values = dict(objective="whats tech news today", capabilities=BOTH, decisions_made=1, max_decisions=6,
                  items=(policy.ItemState(1, RESEARCHER, "done", "find today's tech news", "Chips got faster."),),
                  counts={"done": 1})
    return policy.RuntimeState(**{**values, **overrides})


def test_bootstrap_returns_the_agenda_as_typed_entries(workspace, conductor_script):
    conductor_script.call_tool("set_agenda", {"items": [
        {"capability": "researcher", "task": "find the news"},
        {"capability": "terminal", "task": "list files", "command": "ls", "depends_on": [1]}]})
    result = policy.bootstrap(workspace=workspace, objective="news then files", capabilities=BOTH)
    assert result.error is None
    assert result.output == policy.Agenda((policy.AgendaEntry("researcher", "find the news"),
                                           policy.AgendaEntry("terminal", "list files", "ls", (1,))))
    sent = conductor_script.sent[0]
    assert sent.role == "conductor" and sent.tool_names == ["set_agenda"]
    assert "prefer researcher" in sent.messages[0].content and "researcher" in sent.messages[0].content


def test_bootstrap_keeps_only_capabilities_that_exist(workspace, conductor_script):
    conductor_script.call_tool("set_agenda", {"items": [
        {"capability": "watcher", "task": "watch"}, {"capability": "terminal", "task": "ls", "command": "ls"},
        {"capability": "researcher", "task": "news", "depends_on": [1, 2]}]})
    result = policy.bootstrap(workspace=workspace, objective="news", capabilities=(RESEARCHER,))
    assert result.output.items == (policy.AgendaEntry("researcher", "news"),)  # dependencies on dropped items go
    assert result.output.dropped == ("watcher", "terminal")


@pytest.mark.parametrize(("answer", "code"), [
    ({"text": "I would research it."}, "no_action"),
    ({"tool_calls": [{"name": "spawn_everything", "arguments": {}}]}, "unknown_action"),
    ({"tool_calls": [{"name": "spawn_worker", "arguments": {"capability": "researcher"}}]}, "malformed"),
    ({"tool_calls": [{"name": "spawn_worker", "arguments": {"capability": "watcher", "task": "x"}}]}, "malformed"),
    ({"tool_calls": [{"name": "complete", "arguments": {"answer": ""}}]}, "malformed"),
])
def test_a_decision_the_policy_cannot_use_is_a_typed_error_not_a_crash(workspace, conductor_script, answer, code):
    conductor_script.reply(**answer)
    result = policy.decide(workspace=workspace, state=state())
    assert result.output is None
    assert isinstance(result.error, policy.PolicyError) and result.error.code == code


def test_a_failed_model_call_is_a_typed_error(workspace, conductor_script):
    conductor_script.fail("bad_request")
    result = policy.decide(workspace=workspace, state=state())
    assert result.output is None and result.error.code == "llm_bad_request"


@pytest.mark.parametrize(("tool", "arguments", "expected"), [
    ("spawn_worker", {"capability": "researcher", "task": "more", "reason": "thin"},
     policy.SpawnWorker("researcher", "more", "", "thin")),
    ("await_worker", {}, policy.AwaitWorker()),
    ("merge_canon", {"reason": "r"}, policy.MergeCanon("r")),
    ("complete", {"answer": "Chips got faster."}, policy.Complete("Chips got faster.")),
    ("block", {"reason": "no way"}, policy.Block("no way")),
])
def test_each_typed_action(workspace, conductor_script, tool, arguments, expected):
    conductor_script.call_tool(tool, arguments)
    assert policy.decide(workspace=workspace, state=state()).output == expected


def test_the_decision_prompt_carries_the_runtime_state_and_the_routing_guidance(workspace, conductor_script):
    conductor_script.call_tool("complete", {"answer": "done"})
    result = policy.decide(workspace=workspace, state=state())
    system, user = (m.content for m in conductor_script.sent[0].messages)
    assert "Routing: prefer researcher" in system and "never for web or news" in system
    assert "Runtime state: 1 agenda item(s): 0 ready, 0 in flight, 0 waiting, 1 done, 0 failed" in user
    assert "Decisions made: 1 of at most 6" in user and "Chips got faster." in user
    assert result.prompt_state in user


def test_the_policy_writes_nothing_but_its_trace(workspace, conductor_script):
    conductor_script.call_tool("set_agenda", {"items": [{"capability": "researcher", "task": "news"}]})
    conductor_script.call_tool("complete", {"answer": "done"})
    with span("test", workspace=workspace, actor_id="conductor:x") as root:
        policy.bootstrap(workspace=workspace, objective="news", capabilities=BOTH, actor_id="conductor:x")
        policy.decide(workspace=workspace, state=state(), actor_id="conductor:x")
    assert not Run.objects.exists() and not AgendaItem.objects.exists() and not Decision.objects.exists()
    kinds = list(TraceEvent.objects.filter(trace_id=root.trace_id, name="llm.call").values_list("kind", "actor_id"))
    assert kinds.count(("llm.call.started", "conductor:x")) == 2
    assert kinds.count(("llm.call.completed", "conductor:x")) == 2


@pytest.mark.parametrize(("objective", "offered", "capability"), [
    ("whats tech news today", BOTH, RESEARCHER),
    ("search the web for rust release notes", BOTH, RESEARCHER),
    ("in the local shell, run `ls -la`", BOTH, TERMINAL),
    ("in the local shell, run `ls -la`", (RESEARCHER,), RESEARCHER),
])
def test_the_offline_model_routes_deterministically(workspace, objective, offered, capability):
    first = policy.bootstrap(workspace=workspace, objective=objective, capabilities=offered)
    again = policy.bootstrap(workspace=workspace, objective=objective, capabilities=offered)
    assert first.output == again.output
    assert [entry.capability for entry in first.output.items] == [capability]
    if capability == TERMINAL:
        assert first.output.items[0].command == "ls -la"


def test_the_offline_decision_completes_when_all_is_done_and_blocks_when_nothing_is(workspace):
    done = policy.decide(workspace=workspace, state=state())
    assert isinstance(done.output, policy.Complete) and "Chips got faster." in done.output.answer
    failed = policy.decide(workspace=workspace, state=state(
        items=(policy.ItemState(1, RESEARCHER, "failed", "news", "error"),), counts={"failed": 1}))
    assert isinstance(failed.output, policy.Block)
