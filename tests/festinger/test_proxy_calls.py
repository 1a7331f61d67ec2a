"""The work after a proxied call's response (T33): handed to the memory queue once the client has its
last byte (with what the prompt's recollection queued), and done there by a worker: counting the
answer, its cues, the loop guard, the trace."""

import ollama
import pytest

from fathom.llm.types import Completion
from fathom.redis_client import get_redis
from fathom.tracing.models import TraceEvent
from festinger import cache
from festinger.learning import SeenMarks
from festinger.loops.conversations import ConversationName
from festinger.models import Edge
from festinger.proxy.calls import ProxiedCall, proxied_calls_finish
from festinger.proxy.upstreams import upstream_for
from festinger.services import world_ensure
from tests.conftest import wait_for


def test_a_proxied_answer_is_learned_from_by_a_worker_after_the_response(proxy, fake_ollama, workspace,
                                                                          celery_worker):
    fake_ollama.reply_chat("Found it: zorbulon is a repo.")
    answer = ollama.Client(host=proxy, headers={"X-Festinger-Session": "learner"}).chat(
        model="llama3.2", messages=[{"role": "system", "content": "You are a file agent."},
                                    {"role": "user", "content": "Quibbit is a service. What is zorbulon?"}])
    assert answer.message.content == "Found it: zorbulon is a repo."

    # the prompt's cue, sent once the response was out, and the answer's, by the worker
    for concept, parent in (("quibbit", "service"), ("zorbulon", "repo")):
        edge = wait_for(lambda concept=concept: Edge.objects.filter(workspace=workspace, concept__token=concept).first())
        assert (edge.parent.token, edge.dimension.token, edge.source) == (parent, "type", "inferred")
    finished = wait_for(lambda: TraceEvent.objects.filter(workspace=workspace,
                                                          kind="festinger.proxy.call.completed").first())
    assert finished.task_id  # written inside a Celery task, not by the proxy
    assert finished.payload["endpoint"] == "chat" and finished.payload["text"] == "Found it: zorbulon is a repo."
    assert finished.payload["forwarded_system"].endswith("You are a file agent.")
    assert finished.payload["loops"] == {"session": "learner", "level": 0, "events": []}


def test_the_prompt_is_counted_once_its_seen_marks_are_read_after_the_upstream_has_the_request(
        proxy, fake_ollama, workspace, monkeypatch):
    # The prompt's messages are marked seen in Redis on the way in; the answer (which were unseen) is read
    # once the upstream answered, so the two round trips overlap.
    upstream_had_it = []
    read = SeenMarks.unseen

    def unseen(marks):
        upstream_had_it.append(any(path == "/api/chat" for _method, path, _body in fake_ollama.requests))
        return read(marks)

    monkeypatch.setattr(SeenMarks, "unseen", unseen)
    history = [{"role": "user", "content": "gnommoweb is slow"}]
    for session, stream in (("whole", False), ("streamed", True), ("whole", False)):
        fake_ollama.reply_chat("Noted.", chunks=3)
        answer = ollama.Client(host=proxy, headers={"X-Festinger-Session": session}).chat(
            model="llama3.2", messages=history, stream=stream)
        text = "".join(part.message.content for part in answer) if stream else answer.message.content
        assert text == "Noted."

    assert upstream_had_it == [True, True]  # the third call resent a message its conversation counted
    assert cache.world(workspace.pk).encounters("gnommoweb") == 2


def test_learning_that_fails_leaves_the_others_of_the_call_read():
    call = ProxiedCall(workspace_id=1, upstream=None, raw_messages=[], conversation=ConversationName("s", named=True, followed=True))
    learned = []

    def broken():
        raise ValueError("a bug")

    call.learn_later = [broken, lambda: learned.append("read")]
    call.learn()
    assert learned == ["read"] and call.learn_later == []


@pytest.mark.django_db(transaction=True)
def test_an_outcome_delivered_twice_is_finished_once(workspace, settings):
    settings.OLLAMA_HOST = "http://127.0.0.1:9"
    world_ensure(workspace=workspace)
    call = ProxiedCall(workspace_id=workspace.pk, upstream=upstream_for(workspace_id=workspace.pk, name="llama3.2"),
                       raw_messages=[{"role": "user", "content": "Find the report."}],
                       conversation=ConversationName("twice", named=True, followed=True))
    call.prepare()
    outcome = call.outcome(Completion(text="I will look in /tmp.", model="llama3.2", provider="ollama"), "chat")

    assert proxied_calls_finish(outcomes=[outcome]) == 1
    assert proxied_calls_finish(outcomes=[outcome]) == 0
    assert get_redis().llen(f"festinger:loop:{workspace.pk}:twice:outputs") == 1  # the answer counted once
    assert TraceEvent.objects.filter(workspace=workspace, kind="festinger.proxy.call.completed").count() == 1
