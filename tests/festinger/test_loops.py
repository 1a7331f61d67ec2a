"""The loop detector and its mitigations (seed 002, T02/T03): through the proxy in front of a fake
Ollama, and as model middleware around a fire's `complete` calls."""

import httpx
import ollama
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from fathom.llm import Message, complete
from fathom.llm.scripted import Script
from fathom.llm.types import Completion
from fathom.redis_client import get_redis
from fathom.tracing.models import TraceEvent
from fathom.tracing.spans import span
from festinger import cache
from festinger.loops.guard import (
    Conversation,
    LoopSettings,
    StreamRepetition,
    loop_config_update,
    loop_settings,
)
from festinger.loops.models import LoopEvent
from festinger.proxy.serve import own_port_app
from festinger.services import world_ensure
from tests.conftest import wait_for
from tests.festinger.proxy_support import Agent, finished_calls, serving

Kind = LoopEvent.Kind
STUCK = "I will list the files in /tmp to find the report."


@pytest.fixture
def proxy(proxy, celery_worker):
    """The proxy, with the worker that does the work after each response (the loop guard's detection)."""
    return proxy


def kinds(workspace, session) -> list[str]:
    return list(LoopEvent.objects.filter(workspace=workspace, session=session).order_by("id")
                .values_list("kind", flat=True))


def test_repeated_outputs_escalate_through_every_mitigation_to_the_breaker_and_it_closes(
        proxy, fake_ollama, workspace):
    fake_ollama.always_chat(STUCK)
    agent = Agent(proxy, workspace, "stuck-1")

    for _ in range(3):
        agent.turn()
    assert kinds(workspace, "stuck-1") == [Kind.REPEATED_OUTPUT]  # the third same answer is a loop

    agent.turn()  # level 1: hotter
    sent = fake_ollama.chat_bodies()[-1]
    assert sent["options"]["temperature"] == pytest.approx(1.0)

    agent.turn()  # level 2: hotter, and the repeated action forbidden
    sent = fake_ollama.chat_bodies()[-1]
    assert sent["options"]["temperature"] == pytest.approx(1.3)
    assert sent["messages"][-2]["role"] == "system" and STUCK in sent["messages"][-2]["content"]
    assert sent["messages"][-1] == agent.history[-3]  # the note goes just before the newest message

    agent.turn()  # level 3: the repeated turns dropped from the history too
    sent = fake_ollama.chat_bodies()[-1]
    assert sent["options"]["temperature"] == pytest.approx(1.5)  # max_temperature
    assert not any(m["role"] == "assistant" for m in sent["messages"])
    assert len(sent["messages"]) == 12 - 5 + 1  # twelve sent, five repeated answers dropped, one note

    calls = len(fake_ollama.chat_bodies())
    stopped = agent.turn()  # level 4: the breaker opens and answers instead of the model
    assert stopped.done_reason == "loop"
    assert "loop detector stopped this conversation" in stopped.message.content
    again = agent.turn()
    assert again.done_reason == "loop" and len(fake_ollama.chat_bodies()) == calls  # the upstream was spared
    for _ in range(3):  # the open breaker's answers are counted, not written row by row
        assert agent.turn().done_reason == "loop"

    assert kinds(workspace, "stuck-1") == [
        Kind.REPEATED_OUTPUT,
        Kind.TEMPERATURE_BOOST, Kind.REPEATED_OUTPUT,
        Kind.TEMPERATURE_BOOST, Kind.FORBID_ACTION, Kind.REPEATED_OUTPUT,
        Kind.TEMPERATURE_BOOST, Kind.TRUNCATE_HISTORY, Kind.FORBID_ACTION, Kind.REPEATED_OUTPUT,
        Kind.BREAKER_OPENED, Kind.BREAKER_ANSWERED]

    # the cool-down passes: the next call goes upstream again, unmitigated
    get_redis().hset(f"festinger:loop:{workspace.pk}:stuck-1", "breaker_until", 1)
    fake_ollama.reply_chat("Found it in /srv/reports.")
    answer = agent.turn()
    assert answer.message.content == "Found it in /srv/reports." and answer.done_reason == "stop"
    assert "temperature" not in fake_ollama.chat_bodies()[-1].get("options", {})
    assert kinds(workspace, "stuck-1")[-1] == Kind.BREAKER_CLOSED
    closed = LoopEvent.objects.filter(workspace=workspace, session="stuck-1", kind=Kind.BREAKER_CLOSED).get()
    assert closed.detail == {"answered": 4}
    events = TraceEvent.objects.filter(workspace=workspace, kind__startswith="festinger.loop.")
    assert {"festinger.loop.repeated_output", "festinger.loop.breaker_opened"} <= set(
        events.values_list("kind", flat=True))


def test_conversations_are_told_apart_by_session_header(proxy, fake_ollama, workspace):
    fake_ollama.always_chat(STUCK)
    for session in ("a", "b"):
        agent = Agent(proxy, workspace, session)
        agent.turn()
        agent.turn()
    assert LoopEvent.objects.filter(workspace=workspace).count() == 0


def test_without_a_session_header_the_opening_names_the_conversation(proxy, fake_ollama, workspace):
    fake_ollama.always_chat(STUCK)
    client = ollama.Client(host=proxy)
    messages = [{"role": "system", "content": "You are a file agent."}, {"role": "user", "content": "Find it."}]
    for _ in range(3):
        before = finished_calls(workspace)
        answer = client.chat(model="llama3.2", messages=messages)
        wait_for(lambda before=before: finished_calls(workspace) > before)
        messages = [*messages, {"role": "assistant", "content": answer.message.content},
                    {"role": "user", "content": "Again."}]
    event = LoopEvent.objects.get(workspace=workspace)
    assert event.kind == Kind.REPEATED_OUTPUT and event.session.startswith("fp:")


def test_a_tool_call_cycle_is_detected(proxy, fake_ollama, workspace):
    listing = [{"function": {"name": "ls", "arguments": {"path": "/tmp"}}}]
    reading = [{"function": {"name": "cat", "arguments": {"path": "/tmp/a"}}}]
    for index in range(6):
        fake_ollama.reply_chat("", tool_calls=listing if index % 2 == 0 else reading)
    agent = Agent(proxy, workspace, "cycler")
    for _ in range(5):
        agent.turn()
    assert kinds(workspace, "cycler") == []
    agent.turn()  # ls, cat, ls, cat, ls, cat: a period of 2, three times
    event = LoopEvent.objects.get(workspace=workspace, session="cycler")
    assert event.kind == Kind.TOOL_CYCLE and event.detail["period"] == 2
    assert [call["name"] for call in event.detail["calls"]] == ["ls", "cat"]


def test_repetition_inside_one_streamed_answer_cuts_the_stream(proxy, fake_ollama, workspace):
    piece = "I am checking the folder again. "
    fake_ollama.reply_lines([{"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z",
                              "message": {"role": "assistant", "content": piece}, "done": False}] * 30
                            + [{"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z", "done": True,
                                "done_reason": "stop", "message": {"role": "assistant", "content": ""}}])
    parts = list(ollama.Client(host=proxy, headers={"X-Festinger-Session": "babbler"}).chat(
        model="llama3.2", messages=[{"role": "user", "content": "Where is it?"}], stream=True))
    assert parts[-1].done and parts[-1].done_reason == "loop"
    text = "".join(part.message.content for part in parts)
    assert text.count(piece) == 4  # cut at the fourth repetition, not at the thirtieth
    wait_for(lambda: kinds(workspace, "babbler") == [Kind.STREAM_REPETITION])


def test_a_registry_models_answer_repeating_itself_is_cut_too(transactional_db, workspace, settings, celery_worker):
    settings.OLLAMA_HOST = ""
    world_ensure(workspace=workspace)
    script = Script.install(workspace, roles=("proxy",))
    script.reply("Let me open the folder. " * 30)
    with serving(own_port_app(workspace_slug=workspace.slug, token="")) as url:
        parts = list(ollama.Client(host=url, headers={"X-Festinger-Session": "scripted-babbler"}).chat(
            model=f"scripted-{script.name}", messages=[{"role": "user", "content": "Where is it?"}], stream=True))
        assert parts[-1].done_reason == "loop"
        assert "".join(part.message.content for part in parts).count("Let me open the folder.") == 4
        wait_for(lambda: kinds(workspace, "scripted-babbler") == [Kind.STREAM_REPETITION])
    script.reset()
    cache.forget(workspace.pk)


def test_a_thinking_loop_cuts_the_stream_too(proxy, fake_ollama, workspace):
    thought = "Wait, maybe the file is in /tmp. "
    fake_ollama.reply_lines([{"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z", "done": False,
                              "message": {"role": "assistant", "content": "", "thinking": thought}}] * 30
                            + [{"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z", "done": True,
                                "done_reason": "stop", "message": {"role": "assistant", "content": "Found."}}])
    parts = list(ollama.Client(host=proxy, headers={"X-Festinger-Session": "ponderer"}).chat(
        model="llama3.2", messages=[{"role": "user", "content": "Where is it?"}], stream=True, think=True))
    assert parts[-1].done_reason == "loop"
    assert "".join(part.message.thinking or "" for part in parts).count(thought) == 4
    wait_for(lambda: kinds(workspace, "ponderer") == [Kind.STREAM_REPETITION])


def test_thresholds_change_without_a_restart(proxy, fake_ollama, workspace):
    fake_ollama.always_chat(STUCK)
    loop_config_update(workspace=workspace, repeat_count=2)
    agent = Agent(proxy, workspace, "impatient")
    agent.turn()
    agent.turn()
    assert kinds(workspace, "impatient") == [Kind.REPEATED_OUTPUT]


def test_thresholds_are_per_workspace(transactional_db, workspace, other_workspace):
    loop_config_update(workspace=workspace, repeat_count=5, enabled=False)
    assert loop_settings(workspace.pk).repeat_count == 5 and not loop_settings(workspace.pk).enabled
    assert loop_settings(other_workspace.pk) == LoopSettings()


def test_a_fire_that_loops_meets_the_same_guard(scripted_llm, workspace):
    for _ in range(8):
        scripted_llm.reply("Let me search the lake again.")
    messages = [Message.system("You are the harness."), Message.user("What is a rover?")]
    answers = []
    with span("trace.prompt", workspace=workspace):  # one fire: one trace
        for _ in range(8):
            answer = complete(workspace=workspace, role="main", messages=messages)
            answers.append(answer)
            messages = [*messages, answer.message, Message.user("Go on.")]
    assert len(scripted_llm.sent) == 6  # the last two were answered by the breaker
    assert answers[-1].provider == "festinger-loop-breaker"
    assert scripted_llm.sent[3].options["temperature"] == pytest.approx(1.0)
    session = LoopEvent.objects.filter(workspace=workspace).first().session
    assert kinds(workspace, session)[:2] == [Kind.REPEATED_OUTPUT, Kind.TEMPERATURE_BOOST]


def test_fires_asking_alike_are_not_one_conversation_and_other_roles_are_not_watched(scripted_llm, workspace):
    for _ in range(8):
        scripted_llm.reply("SIMPLE")
    messages = [Message.system("Classify the request."), Message.user("What is a rover?")]
    for _ in range(3):
        with span("trace.prompt", workspace=workspace):  # a fire each
            assert complete(workspace=workspace, role="main", messages=messages).text == "SIMPLE"
    with span("trace.prompt", workspace=workspace):  # one fire asking its classifier five times alike
        for _ in range(5):
            assert complete(workspace=workspace, role="classifier", messages=messages).text == "SIMPLE"
    assert not LoopEvent.objects.filter(workspace=workspace).exists()


def test_only_a_conversation_with_a_loop_state_costs_a_round_trip(workspace, monkeypatch):
    reads = []
    hgetall = redis.Redis.hgetall
    monkeypatch.setattr(redis.Redis, "hgetall", lambda client, key: reads.append(key) or hgetall(client, key))
    assert Conversation.of(workspace.pk, "calm").level == 0 and reads == []

    guard = Conversation.of(workspace.pk, "calm")
    for _ in range(3):  # a detection, published: every process hears it before its next call
        found = guard.observe(Completion(text=STUCK))
    assert [event["kind"] for event in found] == [Kind.REPEATED_OUTPUT]
    assert Conversation.of(workspace.pk, "calm").level == 1 and len(reads) == 1

    guard.reset()
    assert Conversation.of(workspace.pk, "calm").level == 0 and len(reads) == 1


def test_stream_repetition_finds_the_repeating_piece():
    watcher = StreamRepetition(LoopSettings(stream_min_chars=5, stream_max_chars=50, stream_repeats=3))
    assert watcher.feed("The answer is near. ") is None
    assert watcher.feed("I look again. I look again. ") is None
    assert watcher.feed("I look again. ") == "I look again. "
    calm = StreamRepetition(LoopSettings(stream_min_chars=5, stream_max_chars=50, stream_repeats=3))
    assert all(calm.feed(word + " ") is None for word in "each word of this answer is a different one".split())


def shortest_repeating_piece(text: str, settings: LoopSettings) -> str | None:
    """What StreamRepetition looks for, by trying every period."""
    repeats = max(2, settings.stream_repeats)
    for period in range(settings.stream_min_chars, min(settings.stream_max_chars, len(text) // repeats) + 1):
        unit = text[-period:]
        if text.endswith(unit * repeats) and unit.strip():
            return unit
    return None


@given(deltas=st.lists(st.text(alphabet="ab .", min_size=1, max_size=9), max_size=80),
       shortest=st.integers(2, 6), longest=st.integers(6, 30), repeats=st.integers(2, 5))
@settings(max_examples=300, deadline=None)
def test_stream_repetition_finds_what_trying_every_period_finds(deltas, shortest, longest, repeats):
    limits = LoopSettings(stream_min_chars=shortest, stream_max_chars=longest, stream_repeats=repeats)
    watcher, text, unchecked = StreamRepetition(limits), "", 0
    for delta in deltas:
        text += delta
        unchecked += len(delta)
        expected = None
        if unchecked >= shortest:  # it looks once at least `stream_min_chars` characters came since the last look
            unchecked = 0
            expected = shortest_repeating_piece(text[-longest * max(2, repeats):], limits)
        assert watcher.feed(delta) == expected


def test_the_breaker_answers_openai_clients_too(proxy, fake_ollama, workspace):
    loop_config_update(workspace=workspace, repeat_count=2, breaker_after=1)
    fake_ollama.always_chat(STUCK)
    body = {"model": "llama3.2", "messages": [{"role": "user", "content": "Find it."}]}
    headers = {"X-Festinger-Session": "openai-loop"}
    for _ in range(2):
        before = finished_calls(workspace)
        httpx.post(f"{proxy}/v1/chat/completions", json=body, headers=headers)
        wait_for(lambda before=before: finished_calls(workspace) > before)
    stopped = httpx.post(f"{proxy}/v1/chat/completions", json=body, headers=headers).json()
    assert "loop detector stopped" in stopped["choices"][0]["message"]["content"]
