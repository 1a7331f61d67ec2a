"""Fires through the loop with the scripted model: the journal, the tools, the turn cap, errors as
tool results, cancellation, resume, introspection, Sit, offline."""

import json
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fathom.llm.scripted import Script
from fathom.tracing.models import TraceEvent
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.fires.services import fire_cancel, fire_create, fire_run
from harness.fires.tools.base import REGISTRY, Tool, ToolError, register
from harness.runtime import claims
from harness.runtime.models import AgentProfile, Session, SessionEvent, Trigger
from harness.runtime.services import harness_settings_get, message_send, sessions_sweep
from tests.harness.support import session_tick


def respond(body="the answer", **extra):
    return {"name": "respond", "arguments": {"body": body, **extra}}


def tool_results(script_request) -> dict:
    return {m.tool_call_id: m.content for m in script_request.messages if m.role == "tool"}


@pytest.fixture
def scratch_tool():
    """Register tools for one test (the registry is open to new tools), removed afterwards."""
    added = []

    def add(name, run, **options):
        added.append(name)
        return register(Tool(name=name, description=f"test tool {name}", run=run,
                             parameters={"type": "object", "properties": {}}, **options))

    yield add
    for name in added:
        REGISTRY.pop(name, None)


def test_a_message_becomes_a_fire_that_plans_responds_and_reviews(scripted_llm, session):
    # given a message and a model that plans, then responds, then skips the review
    message = message_send(session=session, content="compare the rover and the lake")
    scripted_llm.call_tool("plan", {"question": "compare", "steps": ["rover", "lake"]}, id="c1")
    scripted_llm.reply(tool_calls=[respond("they differ", cited_ids=["abc123"], attestation="I compare well.")])
    scripted_llm.call_tool("skip", {"reason": "nothing to name"})
    # when the session ticks
    assert session_tick(session_id=session.pk) == "ended"
    # then the fire answered, in order: main loop, then the review pass
    fire = Fire.objects.get(session=session)
    assert (fire.status, fire.stop_reason, fire.mode) == ("finished", "responded", "reactive")
    assert list(FireTurn.objects.filter(fire=fire).values_list("number", "phase")) == [
        (1, "main"), (2, "main"), (3, "review")]
    assert fire.response["body"] == "they differ" and fire.response["cited_ids"] == ["abc123"]
    assert fire.review["outcome"] == "skip" and fire.model_calls == 3
    assert [s["status"] for s in fire.plan] == ["pending", "pending"]
    # the second call saw the plan with its markers; the review saw only its two tools
    assert "active plan" in scripted_llm.sent[1].messages[-1].content
    assert "○ 1. rover" in scripted_llm.sent[1].messages[-1].content
    assert sorted(t["name"] for t in scripted_llm.sent[2].tools) == ["propose_provenance", "skip"]
    assert "respond" in [t["name"] for t in scripted_llm.sent[0].tools]
    assert "skip" not in [t["name"] for t in scripted_llm.sent[0].tools]
    # the session saw it all, and the lone message is addressed by the respond
    kinds = list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True))
    assert kinds[:2] == ["TriggerAccepted", "TurnStarted"] and kinds[-1] == "TurnEnded"
    # the answer is out before the review pass streams
    assert kinds[-4:-1] == ["AssistantOutput", "AgentStream", "AgentStream"]
    assert kinds.count("AssistantOutput") == 1
    message.refresh_from_db()
    assert message.addressed and message.addressed_note == "answered by respond"


def test_plan_step_moves_the_plan_markers(scripted_llm, workspace):
    fire = fire_create(workspace=workspace, mode="introspective", question="x and y")
    scripted_llm.call_tool("plan", {"question": "x and y", "steps": ["x", "y"]})
    scripted_llm.call_tool("plan", {"question": "x and y", "steps": ["x", "y"], "plan_step": 2})
    scripted_llm.reply(tool_calls=[respond()])
    scripted_llm.call_tool("skip")
    fire_run(fire_id=fire.pk)
    # the second plan call reset the plan, then plan_step 2 marked step 1 done and 2 in flight
    assert "✓ 1. x" in scripted_llm.sent[2].messages[-1].content
    assert "⟳ 2. y" in scripted_llm.sent[2].messages[-1].content
    assert FireToolCall.objects.filter(fire=fire, name="plan").last().plan_step == 2


def test_the_turn_cap_ends_with_a_forced_respond(scripted_llm, workspace):
    limits = harness_settings_get(workspace_id=workspace.pk)
    limits.max_turns_per_fire = 2
    limits.save()
    fire = fire_create(workspace=workspace, mode="introspective", question="loop forever")
    scripted_llm.call_tool("plan", {"question": "a", "steps": ["a"]})
    scripted_llm.call_tool("plan", {"question": "b", "steps": ["b"]})
    scripted_llm.reply(tool_calls=[respond("what I have")])
    scripted_llm.call_tool("skip")
    fire = fire_run(fire_id=fire.pk)
    assert (fire.status, fire.stop_reason) == ("finished", "max_turns")
    assert fire.response["body"] == "what I have"
    forced = scripted_llm.sent[2]
    assert [t["name"] for t in forced.tools] == ["respond"]
    assert "turn cap (2)" in forced.messages[-1].content
    assert FireTurn.objects.get(fire=fire, number=3).forced


def test_a_forced_turn_that_answers_in_text_still_responds(scripted_llm, workspace):
    limits = harness_settings_get(workspace_id=workspace.pk)
    limits.max_turns_per_fire = 1
    limits.save()
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    scripted_llm.call_tool("plan", {"question": "a", "steps": ["a"]})
    scripted_llm.reply("plain words")  # a text answer is a lean respond
    scripted_llm.call_tool("skip")
    fire = fire_run(fire_id=fire.pk)
    assert (fire.stop_reason, fire.response["body"]) == ("max_turns", "plain words")


def test_malformed_arguments_unknown_tools_and_raising_tools_come_back_as_results(
        scripted_llm, workspace, scratch_tool):
    def explode(ctx, args):
        raise RuntimeError("disk on fire")

    scratch_tool("explode", explode)
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    scripted_llm.reply(tool_calls=[
        {"id": "bad", "name": "plan", "arguments": {"question": 42}},
        {"id": "unknown", "name": "teleport", "arguments": {}},
        {"id": "boom", "name": "explode", "arguments": {}},
    ])
    scripted_llm.reply(tool_calls=[{"id": "r1", "name": "respond", "arguments": {}}])  # neither body nor cards
    scripted_llm.reply(tool_calls=[respond("recovered")])
    scripted_llm.call_tool("skip")
    fire = fire_run(fire_id=fire.pk)

    assert fire.status == "finished" and fire.response["body"] == "recovered"
    results = tool_results(scripted_llm.sent[1])
    assert results["bad"].startswith("error: malformed arguments for plan at question")
    assert "unknown tool 'teleport'" in results["unknown"] and "respond" in results["unknown"]
    assert results["boom"] == "error: the tool raised RuntimeError: disk on fire"
    assert tool_results(scripted_llm.sent[2])["r1"] == "error: respond needs a body or at least one card"
    assert not FireToolCall.objects.get(fire=fire, call_id="boom").ok


@pytest.mark.parametrize("field, value", [("mood_shift", "up"), ("cited_ids", "abc123")])
def test_a_respond_of_the_wrong_shape_is_a_tool_error_and_the_message_fires_once(scripted_llm, session, field,
                                                                                 value):
    # given a message, and a model whose first answer gives a field of respond the wrong type
    message = message_send(session=session, content="how are you?")
    scripted_llm.reply(tool_calls=[{"id": "r1", **respond("fine", **{field: value})}])
    scripted_llm.reply(tool_calls=[respond("fine, thanks")])
    scripted_llm.call_tool("skip", {"reason": "-"})
    # when the session ticks, and ticks again as a sweep would
    assert session_tick(session_id=session.pk) == "ended"
    assert session_tick(session_id=session.pk) != "ended"
    # then the model read a tool error naming the field, and the second answer was delivered, once
    assert tool_results(scripted_llm.sent[1])["r1"].startswith(f"error: malformed arguments for respond at {field}")
    fire = Fire.objects.get(session=session)
    assert (fire.status, fire.response["body"]) == ("finished", "fine, thanks")
    assert SessionEvent.objects.filter(session=session, kind="AssistantOutput").count() == 1
    message.refresh_from_db()
    assert message.addressed and len(scripted_llm.sent) == 3


def test_a_raising_tool_leaves_no_half_writes(scripted_llm, session, scratch_tool):
    def half_then_raise(ctx, args):
        message_send(session=session, content="written by the tool")
        raise RuntimeError("after writing")

    scratch_tool("half", half_then_raise)
    fire = fire_create(workspace=session.workspace, mode="introspective", question="q")
    scripted_llm.call_tool("half").reply(tool_calls=[respond()]).call_tool("skip")
    fire_run(fire_id=fire.pk)
    assert not Trigger.objects.filter(content="written by the tool").exists()


def test_a_fire_cancelled_during_a_turn_stops_before_the_next_model_call(scripted_llm, workspace, scratch_tool):
    scratch_tool("cancel_me", lambda ctx, args: fire_cancel(fire=Fire.objects.get(pk=ctx.fire.pk)) and "ok")
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    scripted_llm.call_tool("cancel_me").reply(tool_calls=[respond()])
    fire = fire_run(fire_id=fire.pk)
    assert (fire.status, fire.stop_reason, fire.model_calls) == ("cancelled", "cancelled", 1)
    assert scripted_llm.pending == 1


def test_a_message_whose_fire_is_cancelled_never_fires_again(scripted_llm, api, session, scratch_tool):
    # given a message whose fire is cancelled over REST while it works
    scratch_tool("cancel_me", lambda ctx, args: api.post(f"/v1/fires/{ctx.fire.pk}/cancel").status_code == 202
                 and "ok")
    message = message_send(session=session, content="a long question")
    scripted_llm.call_tool("cancel_me").reply(tool_calls=[respond()])
    # when the session ticks, and the sweep ticks it twice more
    assert session_tick(session_id=session.pk) == "cancelled"
    for _ in range(2):
        assert session.pk not in sessions_sweep(stale_after=0)
        session_tick(session_id=session.pk)
    # then the fire stopped cancelled, its message is addressed as such, and nothing fired again
    fire = Fire.objects.get(session=session)
    assert (fire.status, fire.model_calls, scripted_llm.pending) == ("cancelled", 1, 1)
    message.refresh_from_db()
    assert message.addressed and message.addressed_note == f"cancelled with fire {fire.pk}"
    assert Fire.objects.filter(session=session).count() == 1
    # and the session's stream says the turn was cancelled, not answered
    events = api.get(f"/v1/sessions/{session.pk}/events?after=0").json()["events"]
    ends = [event["data"] for event in events if event["kind"] in ("TurnEnded", "TurnFailure")]
    assert [(end["turn"], end["status"]) for end in ends] == [(fire.turn.number, "cancelled")]
    assert not any(event["kind"] == "AssistantOutput" for event in events)


def test_a_fire_not_started_is_cancelled_at_once(workspace):
    fire = fire_cancel(fire=fire_create(workspace=workspace, mode="introspective", question="q"))
    assert (fire.status, fire.stop_reason) == ("cancelled", "cancelled")


def test_a_fire_resumes_from_its_journal_without_asking_the_model_again(scripted_llm, workspace, scratch_tool):
    # given a fire whose process died while running the first turn's second tool
    crashes = []

    def crash_once(ctx, args):
        if not crashes:
            crashes.append(1)
            raise SystemExit("killed")  # not an Exception: like the process vanishing, nothing is recorded
        return "survived"

    scratch_tool("fragile", crash_once)
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    scripted_llm.reply(tool_calls=[{"id": "p", "name": "plan", "arguments": {"question": "q", "steps": ["s"]}},
                                   {"id": "f", "name": "fragile", "arguments": {}}])
    scripted_llm.reply(tool_calls=[respond()]).call_tool("skip")
    with pytest.raises(SystemExit):
        fire_run(fire_id=fire.pk)
    Fire.objects.filter(pk=fire.pk).update(runner="gone:1:1", runner_heartbeat_at=None)  # its runner is dead
    assert FireToolCall.objects.filter(fire=fire).count() == 1 and len(scripted_llm.sent) == 1
    # when it is run again
    fire = fire_run(fire_id=fire.pk)
    # then the committed turn was not asked again; only the missing tool result was made
    assert fire.status == "finished" and fire.model_calls == 3 and len(scripted_llm.sent) == 3
    assert list(FireToolCall.objects.filter(fire=fire, turn__number=1).values_list("call_id", "result")) == [
        ("p", FireToolCall.objects.get(fire=fire, call_id="p").result), ("f", "survived")]


def test_a_claimed_fire_is_not_run_twice(scripted_llm, workspace):
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    Fire.objects.filter(pk=fire.pk).update(runner="elsewhere:1:1", runner_heartbeat_at=claims.timezone.now())
    assert fire_run(fire_id=fire.pk).status == "accepted"
    assert scripted_llm.sent == []


def test_introspect_runs_a_child_fire_inline_with_recursion_and_side_effects_disabled(scripted_llm, workspace):
    parent = fire_create(workspace=workspace, mode="reactive", question="who am I?")
    scripted_llm.call_tool("introspect", {"question": "what do I value?"}, id="i1")
    scripted_llm.reply(tool_calls=[respond("I value care", cited_ids=["def456"])])  # the child answers
    scripted_llm.call_tool("skip")  # the child's review
    scripted_llm.reply(tool_calls=[respond("you value care")])
    scripted_llm.call_tool("skip")
    parent = fire_run(fire_id=parent.pk)

    child = Fire.objects.get(parent=parent)
    assert (child.mode, child.depth, child.status) == ("introspective", 1, "finished")
    assert child.disabled_tools == ["dispatch_helper", "introspect", "mint_routine"]
    child_tools = {t["name"] for t in scripted_llm.sent[1].tools}
    assert "introspect" not in child_tools and "respond" in child_tools
    assert '"body": "I value care"' in tool_results(scripted_llm.sent[3])["i1"]
    assert parent.response["body"] == "you value care"
    assert child.spawned_by == f"{parent.pk}:1:i1"


def test_a_child_fires_rest_view_holds_its_own_part_of_its_parents_trace_and_the_parents_the_whole(
        scripted_llm, api, workspace):
    # given a fire that asked a child fire inline (the child runs inside the parent's trace)
    parent = fire_create(workspace=workspace, mode="reactive", question="who am I?")
    scripted_llm.call_tool("introspect", {"question": "what do I value?"}, id="i1")
    scripted_llm.reply(tool_calls=[respond("I value care")]).call_tool("skip")  # the child answers, its review
    scripted_llm.reply(tool_calls=[respond("you value care")]).call_tool("skip")
    parent = fire_run(fire_id=parent.pk)
    child = Fire.objects.get(parent=parent)
    in_trace = TraceEvent.objects.filter(trace_id=parent.trace_id)

    parents, childs = api.get(f"/v1/fires/{parent.pk}").json(), api.get(f"/v1/fires/{child.pk}").json()

    # then the parent's shows the whole trace, the child's calls included, and the child's its own calls only
    assert child.trace_id == parent.trace_id
    assert len(parents["trace"]) == in_trace.count() > len(childs["trace"]) == in_trace.filter(
        run_id=str(child.pk)).count()
    assert {role: row["calls"] for role, row in parents["calls_by_role"].items()} == {"main": 3, "review": 2}
    assert {role: row["calls"] for role, row in childs["calls_by_role"].items()} == {"main": 1, "review": 1}


def test_introspection_is_capped_at_depth_one(scripted_llm, workspace):
    parent = fire_create(workspace=workspace, mode="reactive", question="q")
    child = fire_create(workspace=workspace, mode="introspective", question="deeper", parent=parent)
    scripted_llm.call_tool("introspect", {"question": "deeper still"}, id="i2")
    scripted_llm.reply(tool_calls=[respond()]).call_tool("skip")
    fire_run(fire_id=child.pk)
    assert tool_results(scripted_llm.sent[1])["i2"] == "error: introspection is capped at depth 1"
    assert not Fire.objects.filter(parent=child).exists()


@pytest.mark.django_db(transaction=True)
def test_deliberate_hears_the_voices_in_parallel(scripted_llm, workspace):
    fire = fire_create(workspace=workspace, mode="introspective", question="should I?")
    scripted_llm.call_tool("deliberate", {"question": "should I?", "voices": ["skeptic", "advocate"]}, id="d")
    scripted_llm.reply("voice one").reply("voice two")
    scripted_llm.reply(tool_calls=[respond()]).call_tool("skip")
    fire_run(fire_id=fire.pk)
    result = FireToolCall.objects.get(fire_id=fire.pk, call_id="d").result
    assert "## skeptic" in result and "## advocate" in result
    assert {"voice one", "voice two"} <= {line for line in result.splitlines()}
    voices = [r for r in scripted_llm.sent if r.messages[0].content.startswith(("You are the skeptic",
                                                                                  "You are the advocate"))]
    assert len(voices) == 2


def test_a_sit_continues_with_next_prompt_until_the_round_cap(scripted_llm, api, session):
    response = api.post(f"/v1/sessions/{session.pk}/sit", {"prompt": "what is on my mind?", "rounds": 2},
                        format="json")
    assert response.status_code == 202
    scripted_llm.reply(tool_calls=[respond("rivers", next_prompt="why rivers?")]).call_tool("skip")
    scripted_llm.reply(tool_calls=[respond("because they move", next_prompt="and then?")]).call_tool("skip")
    assert session_tick(session_id=session.pk) == "ended"
    assert session_tick(session_id=session.pk) == "ended"
    assert session_tick(session_id=session.pk) == "idle"  # round 2 was the cap: its next_prompt is not sent
    fires = list(Fire.objects.filter(session=session).order_by("created_at"))
    assert [f.mode for f in fires] == ["self_directing", "self_directing"]
    assert [f.work_set["messages"][0]["content"] for f in fires] == ["what is on my mind?", "why rivers?"]
    assert all(t.addressed for t in Trigger.objects.filter(session=session))


def test_a_sit_stops_when_a_round_omits_next_prompt(scripted_llm, api, session):
    api.post(f"/v1/sessions/{session.pk}/sit", {"prompt": "sit"}, format="json")
    scripted_llm.reply(tool_calls=[respond("settled")]).call_tool("skip")
    session_tick(session_id=session.pk)
    assert session_tick(session_id=session.pk) == "idle"
    assert Fire.objects.filter(session=session).count() == 1


def test_a_later_fire_sees_the_river_before_it(scripted_llm, session):
    message_send(session=session, content="my cat is called Io")
    scripted_llm.reply(tool_calls=[respond("noted: Io")]).call_tool("skip")
    session_tick(session_id=session.pk)
    message_send(session=session, content="what is my cat called?")
    scripted_llm.reply(tool_calls=[respond("Io")]).call_tool("skip")
    session_tick(session_id=session.pk)
    seen = [(m.role, m.content) for m in scripted_llm.sent[2].messages[1:]]
    assert seen == [("user", "my cat is called Io"), ("assistant", "noted: Io"), ("user", "what is my cat called?")]


def test_with_no_model_configured_the_offline_model_answers(session):
    message_send(session=session, content="hello there")
    assert session_tick(session_id=session.pk) == "ended"
    fire = Fire.objects.get(session=session)
    assert fire.status == "finished" and fire.response["body"].startswith("[offline]")
    assert fire.turns.first().provider == "offline"


def test_a_failing_model_fails_the_fire_and_the_turn(scripted_llm, session):
    message_send(session=session, content="hi")
    scripted_llm.fail("bad_request", "no such thing")
    assert session_tick(session_id=session.pk) == "failed"
    fire = Fire.objects.get(session=session)
    assert (fire.status, fire.stop_reason) == ("failed", "error") and "no such thing" in fire.error
    assert SessionEvent.objects.filter(session=session, kind="TurnFailure").exists()


def test_the_fire_api_shows_turns_calls_counts_and_cancels(scripted_llm, api, workspace):
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    scripted_llm.call_tool("plan", {"question": "q", "steps": ["s"]}, id="p1")
    scripted_llm.reply(tool_calls=[respond("done")]).call_tool("skip")
    fire_run(fire_id=fire.pk)
    body = api.get(f"/v1/fires/{fire.pk}").json()
    assert body["status"] == "finished" and body["model_calls"] == 3
    assert body["turns"][0]["calls"][0]["call_id"] == "p1" and body["trace_id"]
    assert body["input_tokens"] > 0
    assert api.post(f"/v1/fires/{fire.pk}/cancel").json()["status"] == "finished"
    assert [f["id"] for f in api.get("/v1/fires").json()["results"]] == [str(fire.pk)]


def test_introspect_over_rest_returns_the_answer(scripted_llm, api):
    scripted_llm.reply(tool_calls=[respond("within")]).call_tool("skip")
    response = api.post("/v1/introspect", {"question": "what now?"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["body"] == "within"
    assert Fire.objects.get(pk=response.json()["fire_id"]).mode == "introspective"


def test_an_unknown_tool_error_names_the_fires_tools_only(scripted_llm, workspace):
    fire = fire_create(workspace=workspace, mode="introspective", question="q", disabled_tools=["deliberate"])
    scripted_llm.call_tool("deliberate", {"question": "q"}, id="x")
    scripted_llm.reply(tool_calls=[respond()]).call_tool("skip")
    fire_run(fire_id=fire.pk)
    assert "unknown tool 'deliberate'" in tool_results(scripted_llm.sent[1])["x"]
    assert "deliberate" not in {t["name"] for t in scripted_llm.sent[0].tools}
    with pytest.raises(ToolError):
        raise ToolError("sanity")


def test_the_sweep_enqueues_fires_outside_sessions_whose_runner_is_gone(workspace, monkeypatch):
    from harness.fires import services

    enqueued = []
    monkeypatch.setattr(services, "fire_enqueue", lambda *, fire: enqueued.append(fire.pk))
    # given an async introspection whose worker died, one still running, one just accepted, one done
    orphan = fire_create(workspace=workspace, mode="introspective", question="orphan")
    Fire.objects.filter(pk=orphan.pk).update(status="running", runner="gone:1:1",
                                             runner_heartbeat_at=claims.timezone.now() - claims.timedelta(hours=1))
    live = fire_create(workspace=workspace, mode="introspective", question="live")
    Fire.objects.filter(pk=live.pk).update(status="running", runner="elsewhere:1:1",
                                           runner_heartbeat_at=claims.timezone.now())
    fresh = fire_create(workspace=workspace, mode="introspective", question="fresh")
    done = fire_create(workspace=workspace, mode="introspective", question="done")
    Fire.objects.filter(pk=done.pk).update(status="finished")
    # then only the orphan is enqueued again
    assert services.fires_sweep() == [orphan.pk] and enqueued == [orphan.pk]
    assert fresh.pk not in enqueued and live.pk not in enqueued


# Every statement of a turn is a round trip on the path between two model calls: a few, and the same
# few whatever the fire's length (the journal is never read back). Counted from two fires that differ
# by TOOL_TURNS tool turns, so the fire's own start and end drop out (after a first fire, which reads
# and caches what every later one finds ready: the workspace's model, its default agent profile).
TOOL_TURNS = 4


def statements_per_tool_turn(workspace, tool: str, *, session=None) -> float:
    # The harness's own statements: Festinger's middleware is left out (settings), since a worker left
    # running by an earlier test may write the cues these fires' texts queue, and the world's reload
    # then lands in whichever turn comes next; and the script answers the fire's `main` role only, so
    # such a worker judging a finished fire (role `classifier`) cannot take the next fire's answers.
    # The first fire warms this process's caches; each size then runs twice and keeps its fewest
    # statements, for any other cache another process invalidates meanwhile.
    script = Script.install(workspace, roles=("main",))
    counts = []
    for tool_turns in (1, 1, 1, 1 + TOOL_TURNS, 1 + TOOL_TURNS):
        if session is None:
            fire = fire_create(workspace=workspace, mode="introspective", question="q")
        else:
            fire = fire_create(workspace=workspace, mode="reactive", question="q", session=session)
        for _ in range(tool_turns):
            script.call_tool(tool)
        script.reply(tool_calls=[respond()]).call_tool("skip")
        with CaptureQueriesContext(connection) as queries:
            assert fire_run(fire_id=fire.pk).status == "finished"
        counts.append([query["sql"][:80] for query in queries.captured_queries])
    small, large = min(counts[1:3], key=len), min(counts[3:], key=len)
    extra = Counter(large) - Counter(small)
    return StatementsPerTurn((len(large) - len(small)) / TOOL_TURNS, sorted(extra.elements()))


class StatementsPerTurn(float):
    """Statements per tool turn; `extra` lists what the longer fire ran beyond the shorter one."""

    def __new__(cls, value: float, extra: list[str]):
        made = super().__new__(cls, value)
        made.extra = extra
        return made

    def __repr__(self):
        return f"{float(self)} (extra statements: {self.extra})"


@pytest.mark.django_db(transaction=True)  # transactions as in production: BEGIN and COMMIT are counted
@pytest.mark.parametrize("transactional, per_turn", [
    (True, 6),   # trace flush, the turn (with the fire's counters), trace flush; BEGIN, the result, COMMIT
    (False, 4),  # a tool that only reads runs outside a transaction: its result is one statement
])
def test_a_tool_turn_takes_a_fixed_few_statements(workspace, scratch_tool, transactional, per_turn, settings):
    settings.FATHOM_MODEL_MIDDLEWARE = []
    scratch_tool("noop", lambda ctx, args: "ok", transactional=transactional)
    assert statements_per_tool_turn(workspace, "noop") == per_turn


@pytest.mark.django_db(transaction=True)
def test_a_tool_turn_of_a_session_fire_takes_a_fixed_few_statements(session, scratch_tool, settings):
    settings.FATHOM_MODEL_MIDDLEWARE = []
    # the same, plus each commit's AgentStream event, numbered by an UPDATE of the session row that is the
    # session's heartbeat too, and BEGIN and COMMIT around each commit
    scratch_tool("noop", lambda ctx, args: "ok", transactional=False)
    assert claims.claim(Session, session.pk, stale_after=60)  # as the session's tick does
    assert statements_per_tool_turn(session.workspace, "noop", session=session) == 12


def test_a_running_fire_sends_the_prompt_its_journal_renders_after_a_resume(scripted_llm, workspace, scratch_tool):
    # given a tool call whose arguments come in another key order than the journal (jsonb) keeps
    scratch_tool("noop", lambda ctx, args: "ok")
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    scripted_llm.call_tool("noop", {"zeta": {"yy": 1, "b": 2}, "a": 1}, id="n")
    scripted_llm.reply(tool_calls=[respond()]).call_tool("skip")
    # when it runs
    fire_run(fire_id=fire.pk)
    # then its second call showed the first turn as a resumed fire reads it back: the same prompt
    sent = next(m for m in scripted_llm.sent[1].messages if m.role == "assistant").tool_calls[0].arguments
    stored = FireTurn.objects.get(fire=fire, number=1).tool_calls[0]["arguments"]
    assert json.dumps(sent) == json.dumps(stored)


def test_a_fire_outside_a_session_reads_the_default_agent_without_storing_it(scripted_llm, workspace):
    fire = fire_create(workspace=workspace, mode="introspective", question="who are you?")
    scripted_llm.reply(tool_calls=[respond()]).call_tool("skip")
    fire_run(fire_id=fire.pk)
    assert "You are Fathom" in scripted_llm.sent[0].messages[0].content
    assert not AgentProfile.objects.filter(workspace=workspace).exists()


@pytest.mark.django_db(transaction=True)  # the fire's own transactions, as on a worker
def test_a_session_fire_stops_when_its_session_is_taken_over(scripted_llm, session, scratch_tool):
    # given a session fire whose tool runs while another runner takes the session over
    def taken_over(ctx, args):
        Session.objects.filter(pk=session.pk).update(runner="elsewhere:1:1")
        return "ok"

    scratch_tool("slow", taken_over, transactional=False)
    assert claims.claim(Session, session.pk, stale_after=60)
    fire = fire_create(workspace=session.workspace, mode="reactive", question="q", session=session)
    scripted_llm.call_tool("slow", id="s").reply(tool_calls=[respond()])
    # when it records the tool's result, then
    with pytest.raises(claims.ClaimLost):
        fire_run(fire_id=fire.pk)
    # it stopped there: the result was not committed and the model was not asked again
    assert not FireToolCall.objects.filter(fire=fire).exists() and len(scripted_llm.sent) == 1
