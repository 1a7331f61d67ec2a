"""The loop guard follows conversations, not prompts (issue 30): through the proxy's own port (and the
main port's mount) in front of a fake Ollama, with the worker that records the loop events.

A conversation is what the client says it is (X-Festinger-Session, OpenAI's `user`, scoped by its key)
or the growing history of one exchange; identical one-shot requests are no loop; the state a mitigation
needs is there before the next turn however soon it comes; a whole answer repeating itself is cut."""

import json
import time

import httpx
import ollama
import pytest

from fathom.redis_client import get_redis
from festinger.loops.conversations import conversation_name
from festinger.loops.guard import LoopSettings, StreamRepetition, loop_config_update
from festinger.loops.models import LoopEvent
from tests.conftest import wait_for
from tests.festinger.proxy_support import finished_calls

Kind = LoopEvent.Kind
STUCK = "I will list the files in /tmp to find the report."
SENTENCE = "I will check the folder again. "
ESCALATION = [Kind.REPEATED_OUTPUT,
              Kind.TEMPERATURE_BOOST, Kind.REPEATED_OUTPUT,
              Kind.TEMPERATURE_BOOST, Kind.FORBID_ACTION, Kind.REPEATED_OUTPUT,
              Kind.TEMPERATURE_BOOST, Kind.TRUNCATE_HISTORY, Kind.FORBID_ACTION, Kind.REPEATED_OUTPUT,
              Kind.BREAKER_OPENED, Kind.BREAKER_ANSWERED]


@pytest.fixture
def proxy(proxy, celery_worker):
    """The proxy, with the worker that records the loop events after each response."""
    return proxy


def events(workspace) -> list[LoopEvent]:
    return list(LoopEvent.objects.filter(workspace=workspace).order_by("id"))


def loop_keys(workspace) -> list[str]:
    return list(get_redis().scan_iter(f"festinger:loop:{workspace.pk}:*"))


def test_identical_one_shot_requests_from_many_callers_trip_nothing(proxy, fake_ollama, workspace):
    fake_ollama.always_chat(STUCK)
    messages = [{"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "Please update gnommoweb to use FastAPI instead."}]
    reasons = []
    with httpx.Client(base_url=proxy, timeout=30) as client:
        for index in range(200):
            if index % 4 == 3:  # OpenAI's clients too
                body = client.post("/v1/chat/completions", json={"model": "llama3.2", "messages": messages}).json()
                reasons.append(body["choices"][0]["finish_reason"])
            else:  # whole and streamed
                answer = client.post("/api/chat", json={"model": "llama3.2", "messages": messages,
                                                        "stream": index % 4 == 1})
                reasons.append(json.loads(answer.text.splitlines()[-1])["done_reason"])

    assert len(fake_ollama.chat_bodies()) == 200  # every one went upstream
    assert set(reasons) == {"stop"}
    assert all("temperature" not in (sent.get("options") or {}) for sent in fake_ollama.chat_bodies())
    wait_for(lambda: finished_calls(workspace) == 200, timeout=60)
    assert events(workspace) == [] and loop_keys(workspace) == []  # no row, no state


@pytest.mark.parametrize("named", [True, False], ids=["session-header", "history-with-changing-system-prompt"])
def test_a_looping_agent_with_no_pause_between_turns_meets_note_truncation_and_breaker_in_order(
        proxy, fake_ollama, workspace, named):
    fake_ollama.always_chat(STUCK)
    client = ollama.Client(host=proxy, headers={"X-Festinger-Session": "fast-agent"} if named else {})
    task = {"role": "user", "content": "Find the quarterly report."}
    history, answers = [], []
    for _ in range(8):  # each turn sent the moment the last answer is in: nothing waits for the worker
        system = {"role": "system", "content": f"You are a file agent. It is {time.time_ns()} ns."}
        answer = client.chat(model="llama3.2", messages=[system, task, *history])
        answers.append(answer)
        history += [{"role": "assistant", "content": answer.message.content},
                    {"role": "user", "content": "That did not work. Go on."}]

    sent = fake_ollama.chat_bodies()
    assert len(sent) == 6  # the seventh and eighth turns were answered by the breaker
    assert ["temperature" in (body.get("options") or {}) for body in sent] == [False] * 3 + [True] * 3
    notes = [any(m["role"] == "system" and "Loop guard" in m["content"] for m in body["messages"]) for body in sent]
    assert notes == [False] * 4 + [True] * 2  # the note from the fifth turn
    truncated = [not any(m["role"] == "assistant" for m in body["messages"]) for body in sent[1:]]
    assert truncated == [False] * 4 + [True]  # the repeated answers dropped from the sixth turn
    assert [answer.done_reason for answer in answers] == ["stop"] * 6 + ["loop"] * 2
    assert "loop detector stopped this conversation" in answers[6].message.content

    wait_for(lambda: len(events(workspace)) == len(ESCALATION))
    recorded = events(workspace)
    assert [event.kind for event in recorded] == ESCALATION
    sessions = {event.session for event in recorded}
    assert sessions == {"fast-agent"} if named else (len(sessions) == 1 and sessions.pop().startswith("fp:"))


@pytest.mark.parametrize("route", ["chat", "generate", "openai", "openai-session"])
def test_a_whole_answer_repeating_one_sentence_is_cut(proxy, fake_ollama, workspace, route):
    fake_ollama.always_chat(SENTENCE * 40)
    question = [{"role": "user", "content": "Where is the report?"}]
    if route == "chat":
        answer = httpx.post(f"{proxy}/api/chat", json={"model": "llama3.2", "messages": question, "stream": False})
        text, reason = answer.json()["message"]["content"], answer.json()["done_reason"]
    elif route == "generate":
        answer = httpx.post(f"{proxy}/api/generate", json={"model": "llama3.2", "prompt": "Where?", "stream": False})
        text, reason = answer.json()["response"], answer.json()["done_reason"]
    else:
        headers = {"X-Festinger-Session": "whole-babbler"} if route == "openai-session" else {}
        answer = httpx.post(f"{proxy}/v1/chat/completions", json={"model": "llama3.2", "messages": question},
                            headers=headers)
        text, reason = answer.json()["choices"][0]["message"]["content"], answer.json()["choices"][0]["finish_reason"]

    assert answer.status_code == 200
    assert text == SENTENCE * 4  # cut where a stream of it would have been, not forty times
    assert reason == ("stop" if route.startswith("openai") else "loop")
    wait_for(lambda: [event.kind for event in events(workspace)] == [Kind.STREAM_REPETITION])
    event = events(workspace)[0]
    # a one-shot request changes no state (level 0); a named conversation counts it as a detection
    assert event.level == (1 if route == "openai-session" else 0)
    assert event.detail["repeated"] == SENTENCE


def test_two_callers_who_start_alike_are_told_apart(proxy, fake_ollama, workspace):
    fake_ollama.always_chat(STUCK)  # the first caller's model repeats itself
    client = ollama.Client(host=proxy)
    opening = [{"role": "system", "content": "You are a file agent."},
               {"role": "user", "content": "Find the quarterly report."}]
    stuck, moving = list(opening), list(opening)
    for turn in range(8):
        answer = client.chat(model="llama3.2", messages=stuck)
        stuck += [{"role": "assistant", "content": answer.message.content}, {"role": "user", "content": "Go on."}]
        fake_ollama.reply_chat("The report is in /srv." if turn == 0 else f"Step {turn}: opened /srv/q{turn}.")
        other = client.chat(model="llama3.2", messages=moving)
        assert other.done_reason == "stop" and other.message.content != STUCK
        moving += [{"role": "assistant", "content": other.message.content}, {"role": "user", "content": "Go on."}]
    assert answer.done_reason == "loop"  # the first caller's breaker is open

    seconds = [body for body in fake_ollama.chat_bodies() if len(body["messages"]) > 2
               and body["messages"][2]["content"] == "The report is in /srv."]
    assert len(seconds) == 7  # every turn of the second caller went upstream, untouched
    assert all("temperature" not in (body.get("options") or {}) for body in seconds)
    assert all(not any("Loop guard" in m["content"] for m in body["messages"]) for body in seconds)
    wait_for(lambda: Kind.BREAKER_ANSWERED in [event.kind for event in events(workspace)])
    assert len({event.session for event in events(workspace)}) == 1  # the first caller's alone


def test_openais_user_and_the_session_header_name_a_conversation_of_stateless_calls(proxy, fake_ollama, workspace):
    loop_config_update(workspace=workspace, repeat_count=3)
    fake_ollama.always_chat(STUCK)
    for index in range(3):  # no history, another question each time: only the name ties them together
        question = [{"role": "user", "content": f"Question {index}: where is the report?"}]
        httpx.post(f"{proxy}/v1/chat/completions", json={"model": "llama3.2", "messages": question,
                                                         "user": "agent-7"})
        httpx.post(f"{proxy}/api/generate", json={"model": "llama3.2", "prompt": f"Question {index}?", "stream": False},
                   headers={"X-Festinger-Session": "agent-8"})
        httpx.post(f"{proxy}/api/generate", json={"model": "llama3.2", "prompt": f"Question {index}?", "stream": False})

    wait_for(lambda: len(events(workspace)) == 2)
    assert sorted((event.session, event.kind) for event in events(workspace)) == [
        ("agent-7", Kind.REPEATED_OUTPUT), ("agent-8", Kind.REPEATED_OUTPUT)]


def test_two_keys_with_the_same_session_name_are_two_conversations(main_port, workspace, api_client_for,
                                                                   fake_ollama, celery_worker):
    loop_config_update(workspace=workspace, repeat_count=2, breaker_after=1)
    fake_ollama.always_chat(STUCK)
    first, second = (api_client_for(workspace)._credentials["HTTP_AUTHORIZATION"] for _ in range(2))
    url = f"{main_port}/v1/festinger/proxy/api/chat"
    body = {"model": "llama3.2", "stream": False, "messages": [{"role": "user", "content": "Find it."}]}

    def turn(key):
        return httpx.post(url, json=body, headers={"Authorization": key, "X-Festinger-Session": "shared"}).json()

    assert [turn(first)["done_reason"] for _ in range(3)] == ["stop", "stop", "loop"]
    assert turn(second)["done_reason"] == "stop"  # the other key's conversation of the same name is calm
    wait_for(lambda: Kind.BREAKER_OPENED in [event.kind for event in events(workspace)])
    sessions = {event.session for event in events(workspace)}
    assert len(sessions) == 1 and sessions.pop().endswith(":shared")


def test_a_conversations_name_survives_a_changing_system_prompt_and_holds_its_first_answer():
    def named(system, *rest, caller="", session=None, user=None):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": "Find it."}, *rest]
        return conversation_name(caller=caller, session=session, user=user, messages=messages)

    answer, other = {"role": "assistant", "content": "In /tmp."}, {"role": "assistant", "content": "In /srv."}
    more = ({"role": "user", "content": "Go on."}, {"role": "assistant", "content": "Still /tmp."})
    assert not named("It is 10:00.").followed  # a one-shot request: followed nowhere
    assert named("It is 10:00.", answer) == named("It is 10:01.", answer, *more)  # the opening stays put
    assert named("It is 10:00.", answer).followed and named("It is 10:00.", answer) != named("It is 10:00.", other)
    assert named("x", answer, caller="key-1") != named("x", answer, caller="key-2")
    assert named("x", session="agent-1").name == "agent-1" == named("y", user="agent-1").name
    assert named("x", session="agent-1", caller="key-1").name.endswith(":agent-1")
    assert named("x", session="agent-1").followed and not named("x", session="agent-1").first_answer_named


def test_a_whole_answer_is_cut_where_its_stream_would_have_been():
    settings = LoopSettings()
    assert StreamRepetition(settings).cut_of("Let me think.\n" + SENTENCE * 40) == ("Let me think.\n" + SENTENCE * 4,
                                                                                    SENTENCE)
    assert StreamRepetition(settings).cut_of(" ".join(f"word{n}" for n in range(500))) is None
