"""Festinger learns only from the conversation: user and assistant words (never a system prompt, a tool
schema, a tool result or a harness note), each message counted once per conversation whatever the
number of model calls, and writer calls capped per conversation and per workspace hour."""

import json
import uuid

import pytest
from redis.exceptions import RedisError

from fathom.llm import Message, ToolCall, ToolSpec, complete
from fathom.llm.scripted import Script
from fathom.redis_client import get_redis
from festinger import cache, recollection
from festinger.learning import (
    SeenMarks,
    conversation_key,
    conversation_session,
    message_hashes,
    seen_marks_send,
    unseen,
)
from festinger.models import Concept
from festinger.services import config_update, world_ensure
from festinger.writer import concept_write
from harness.fires.models import Fire
from harness.runtime.services import message_send, session_create
from tests.conftest import run_at_once
from tests.harness.support import session_tick


def encounters(workspace, token):
    return cache.world(workspace.pk).encounters(token)


SEARCH = ToolSpec(name="dispatch_helper", description="dispatch a helper host; returns cited_ids",
                  parameters={"type": "object", "properties": {"zorbhost": {"type": "string"}}})


def test_system_prompts_tool_schemas_tool_results_and_harness_notes_are_not_counted(world, scripted_llm):
    scripted_llm.reply("Checking.")
    complete(workspace=world, role="main", tools=[SEARCH], messages=[
        Message.system("You have dispatch_helper and mark_addressed; cite ids as cited_ids."),
        Message.user("Where does gnommoweb run?"),
        Message.assistant("", tool_calls=[ToolCall("c1", "dispatch_helper", {"zorbhost": "x"})]),
        Message.tool("c1", "[d39842a28e07e83e] quuxlog says ids s ids", name="dispatch_helper"),
        Message.user("[harness] active plan:\n1. plan_step zorbplan")])

    for token in ("dispatch_helper", "mark_addressed", "cited_ids", "zorbhost", "quuxlog", "ids",
                  "d39842a28e07e83e", "plan_step", "zorbplan"):
        assert encounters(world, token) == 0, token
    assert encounters(world, "gnommoweb") == 1
    assert encounters(world, "checking") == 0  # a common word: its count goes to the database, not here


def test_each_message_is_counted_once_however_many_calls_resend_it(world, scripted_llm):
    history = [Message.system("You help."), Message.user("Please update gnommoweb")]
    scripted_llm.reply("I will update gnommoweb.").reply("Done with gnommoweb.").reply("Anything else?")

    for _ in range(3):  # a tool loop: every call sends the whole history again, plus the last reply
        answer = complete(workspace=world, role="main", messages=history)
        history = [*history, Message.assistant(answer.text)]

    # the user's message once, and each of the first two replies once (the third has no gnommoweb)
    assert encounters(world, "gnommoweb") == 3
    assert all("<recollection>" not in m.content for m in history)


def test_the_same_words_count_again_in_another_conversation_and_not_at_all_outside_one(world, scripted_llm):
    for _ in range(4):
        scripted_llm.reply("ok")
    complete(workspace=world, role="main", messages=[Message.user("gnommoweb is slow")])
    complete(workspace=world, role="main", messages=[Message.user("gnommoweb is slow")], conversation="thread-2")
    complete(workspace=world, role="main", messages=[Message.user("gnommoweb is slow")], conversation="thread-2")
    complete(workspace=world, role="main", messages=[Message.user("gnommoweb is slow")], conversation=False)

    assert encounters(world, "gnommoweb") == 2


def test_calls_fathom_makes_to_itself_learn_nothing(world, scripted_llm):
    for role in ("classifier", "planner", "verifier"):
        scripted_llm.reply("{}")
        complete(workspace=world, role=role, messages=[Message.user("gnommoweb gnommoweb")])

    assert encounters(world, "gnommoweb") == 0


def test_two_processes_seeing_the_same_messages_count_them_once(world):
    messages = [Message.user(f"message {number}") for number in range(50)]
    results = []

    def see():
        results.append(unseen(workspace_id=world.pk, conversation="shared", messages=messages))

    assert run_at_once([see] * 4) == []
    assert sorted(message.content for found in results for message in found) == sorted(m.content for m in messages)


def test_marks_sent_first_win_though_their_answer_is_read_last(world):
    messages = [Message.user("first"), Message.user("second")]
    sent = seen_marks_send(workspace_id=world.pk, conversation="later", messages=messages)
    # not read yet: this process does not know them as seen, so the next call marks them too
    again = seen_marks_send(workspace_id=world.pk, conversation="later", messages=messages)

    assert again.unseen() == []
    assert [message.content for message in sent.unseen()] == ["first", "second"]
    assert sent.unseen() == sent.unseen()  # the answer is read once
    assert seen_marks_send(workspace_id=world.pk, conversation="later", messages=messages) is None  # known here now


def test_marks_read_give_their_connection_back_to_the_pool(world):
    clients = len(get_redis().client_list())
    for number in range(30):
        seen_marks_send(workspace_id=world.pk, conversation="pooled",
                        messages=[Message.user(f"message {number}")]).unseen()

    assert len(get_redis().client_list()) <= clients + 1


def test_marks_answer_after_redis_closed_the_pools_connections(world, monkeypatch):
    # the pool's connections made anew carry a name, so that Redis closes them alone below (not the
    # connections Celery's broker keeps in this process, nor another process's)
    pool = get_redis().connection_pool
    monkeypatch.setitem(pool.connection_kwargs, "client_name", f"fathom-test-{uuid.uuid4().hex[:8]}")
    pool.reset()
    seen_marks_send(workspace_id=world.pk, conversation="kept", messages=[Message.user("before")]).unseen()
    ours = [client["id"] for client in get_redis().client_list(_type="normal")
            if client["name"] == pool.connection_kwargs["client_name"]]
    for client_id in ours:  # every connection of the pool, closed
        get_redis().client_kill_filter(_id=client_id, skipme=False)
    assert ours

    after = seen_marks_send(workspace_id=world.pk, conversation="kept", messages=[Message.user("after")])
    assert [message.content for message in after.unseen()] == ["after"]


def test_marks_that_fail_when_read_leave_the_call_unlearned_and_answered(world, scripted_llm, monkeypatch):
    def unreachable(marks):
        raise RedisError("Redis went away")

    monkeypatch.setattr(SeenMarks, "unseen", unreachable)
    scripted_llm.reply("ok")
    assert complete(workspace=world, role="main", messages=[Message.user("gnommoweb gnommoweb")]).text == "ok"
    assert encounters(world, "gnommoweb") == 0


def test_a_repeated_message_is_another_message():
    first, second = message_hashes([Message.user("yes"), Message.user("yes")])
    assert first != second
    assert message_hashes([Message.user("yes")]) == [first]


# --- the writer's caps ------------------------------------------------------------------------------------


def answer(token):
    return json.dumps({"triples": [{"concept": token, "parent": "service", "dimension": "type", "is_isa": True,
                                    "confidence": 0.8}]})


@pytest.fixture
def writer(world):
    script = Script.install(world, roles=("writer",))
    yield script
    script.reset()


def test_a_conversation_causes_at_most_its_cap_of_writer_calls(world, writer):
    config_update(config=world_ensure(workspace=world), writer_max_calls=1, writer_calls_per_conversation=2,
                  writer_calls_per_hour=100)
    for token in ("alpha1", "alpha2", "alpha3"):
        writer.reply(answer(token))

    statuses = [concept_write(workspace_id=world.pk, token=token, conversation="c1")["status"]
                for token in ("alpha1", "alpha2", "alpha3")]
    other = concept_write(workspace_id=world.pk, token="alpha3", conversation="c2")["status"]

    assert statuses == ["written", "written", "capped"] and other == "written"
    assert len(writer.sent) == 3


def test_a_workspace_makes_at_most_its_hourly_cap_of_writer_calls(world, writer):
    config_update(config=world_ensure(workspace=world), writer_max_calls=1, writer_calls_per_hour=2)
    for token in ("beta1", "beta2", "beta3"):
        writer.reply(answer(token))

    statuses = [concept_write(workspace_id=world.pk, token=token, conversation=f"c-{token}")["status"]
                for token in ("beta1", "beta2", "beta3")]

    assert statuses == ["written", "written", "capped"] and len(writer.sent) == 2


def test_no_write_is_queued_once_the_conversations_cap_is_spent(world, scripted_llm, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    config_update(config=world_ensure(workspace=world), writer_calls_per_conversation=0)
    queued = []
    monkeypatch.setattr(recollection, "signature", lambda name: type("S", (), {
        "delay": staticmethod(lambda *args: queued.append((name, args)))}))
    Concept.objects.create(workspace=world, token="gnommoweb", encounter_count=50)
    cache.world_reload(world.pk)
    scripted_llm.reply("ok")

    with django_capture_on_commit_callbacks(execute=True):
        complete(workspace=world, role="main", messages=[Message.user("gnommoweb again")])

    assert [name for name, _args in queued if name == "memory.festinger_concept_write"] == []


# --- an offline fire, as a new user tries it ----------------------------------------------------------------


def test_an_offline_fire_learns_the_users_words_once_and_none_of_the_harness(world, monkeypatch,
                                                                             django_capture_on_commit_callbacks):
    writes = []
    monkeypatch.setattr(recollection, "signature", lambda name: type("S", (), {
        "delay": staticmethod(lambda *args: writes.append(args[1]) if name.endswith("concept_write") else None)}))
    session = session_create(workspace=world, title="offline")
    said = ["Please update gnommoweb to use FastAPI instead", "Is gnommoweb deployed yet?",
            "Thanks, and what about the tests of gnommoweb?", "And the nightly build of gnommoweb?"]

    for text in said:
        with django_capture_on_commit_callbacks(execute=True):
            message_send(session=session, content=text)
            session_tick(session_id=session.pk)

    answers = [fire.response["body"] for fire in Fire.objects.filter(session=session).order_by("created_at")]
    # each message once: the three questions; the offline model's answers (Fathom's own stand-in, sent
    # back as history) are not the conversation's words
    assert all(answer.startswith("[offline]") for answer in answers)
    assert encounters(world, "gnommoweb") == sum(text.lower().count("gnommoweb") for text in said)
    for token in ("offline", "answering", "searched"):
        assert encounters(world, token) == 0, token
    for token in ("dispatch_helper", "mark_addressed", "ids", "cited_ids", "provenance", "s", "i"):
        assert encounters(world, token) == 0, token
    # the writer: gnommoweb alone crossed the write threshold (was 14 writes over these fires before
    # Festinger left the harness's words out, and more before it left the offline model's out)
    assert writes == ["gnommoweb"]


def test_a_proxied_conversation_is_counted_under_the_name_the_proxy_gives_it():
    # The proxy names a conversation by its X-Festinger-Session (or `user`): every request of
    # it counts against one conversation, whatever its first user message, as the loop guard sees it.
    token = conversation_session.set("agent-zero-42")
    try:
        first = conversation_key(role="proxy", options={}, messages=[Message.user("hello")])
        later = conversation_key(role="proxy", options={}, messages=[Message.user("a new task")])
        unlearned = conversation_key(role="proxy", options={"conversation": False}, messages=[Message.user("x")])
    finally:
        conversation_session.reset(token)
    unnamed = conversation_key(role="proxy", options={}, messages=[Message.user("a new task")])

    assert first == later == conversation_key(role="proxy", options={"conversation": "agent-zero-42"}, messages=[])
    assert unlearned is None and unnamed not in (None, first)
