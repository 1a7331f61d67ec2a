"""The model layer's one entry point: role resolution, the scripted and offline models, retries,
streaming, middleware."""

import json
import socket
import subprocess
import sys
import time

import pytest
from django.db import connection

from fathom.llm import Completion, Message, StopReason, ToolCall, ToolSpec, complete
from fathom.llm.errors import (
    LLMAuthenticationError,
    LLMDeadlineExceeded,
    LLMRateLimited,
    LLMStreamInterrupted,
    ScriptExhausted,
)
from fathom.llm.offline import OfflineProvider, SearchThenRespond
from fathom.llm.scripted import Script
from fathom.llm.services import model_assign, model_create
from fathom.tracing import span
from fathom.tracing.models import TraceEvent
from tests.conftest import REPO_ROOT, worker_env

SEARCH = ToolSpec("search", "Search the lake", {"type": "object", "properties": {"query": {"type": "string"}},
                                                "required": ["query"]})


def test_a_scripted_reply_comes_back_as_a_typed_completion_and_the_request_is_recorded(workspace, scripted_llm):
    scripted_llm.reply("Paris.", input_tokens=12, output_tokens=3)

    completion = complete(workspace=workspace, role="main",
                          messages=[Message.system("Be brief."), Message.user("Capital of France?")],
                          tools=[SEARCH], temperature=0)

    assert completion.text == "Paris."
    assert completion.stop_reason is StopReason.END
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (12, 3)
    assert completion.provider == "scripted" and completion.model == scripted_llm.name
    assert completion.latency_ms > 0 and completion.call_id and completion.trace_id
    sent = scripted_llm.sent
    assert len(sent) == 1
    assert [m.role for m in sent[0].messages] == ["system", "user"]
    assert sent[0].last_user_text == "Capital of France?"
    assert sent[0].tool_names == ["search"] and sent[0].options["temperature"] == 0 and sent[0].role == "main"


def test_tool_calls_come_back_with_parsed_arguments_and_the_tool_result_goes_out(workspace, scripted_llm):
    scripted_llm.call_tool("search", {"query": "france"}, id="call-1").reply("It is Paris [ab12cd].")

    first = complete(workspace=workspace, role="main", messages=[Message.user("Capital?")], tools=[SEARCH])
    assert first.stop_reason is StopReason.TOOL_CALLS
    assert first.tool_calls == (ToolCall("call-1", "search", {"query": "france"}),)

    history = [Message.user("Capital?"), first.message, Message.tool("call-1", '[{"id": "ab12cd"}]')]
    second = complete(workspace=workspace, role="main", messages=history, tools=[SEARCH])

    assert second.text == "It is Paris [ab12cd]."
    assert scripted_llm.sent[1].messages[1].tool_calls[0].arguments == {"query": "france"}
    assert scripted_llm.sent[1].messages[2].tool_call_id == "call-1"


def test_a_scripted_model_with_nothing_queued_says_so(workspace, scripted_llm):
    with pytest.raises(ScriptExhausted, match=scripted_llm.name):
        complete(workspace=workspace, role="main", messages=[Message.user("hi")])


def test_the_workspace_role_wins_over_its_star_row_and_the_deployment_default(workspace, other_workspace):
    default = Script.install(None, roles=("main",))
    star = Script.install(workspace, roles=("*",))
    verifier = Script.install(workspace, roles=("verifier",))
    for script in (default, star, verifier):
        script.reply(script.name)

    assert complete(workspace=workspace, role="verifier", messages=[Message.user("x")]).text == verifier.name
    assert complete(workspace=workspace, role="main", messages=[Message.user("x")]).text == star.name
    assert complete(workspace=other_workspace, role="main", messages=[Message.user("x")]).text == default.name
    # And with nothing configured for a role anywhere, the offline model answers.
    assert complete(workspace=other_workspace, role="planner", messages=[Message.user("x")]).provider == "offline"


def test_review_and_judge_take_their_parent_roles_model_unless_given_their_own(workspace):
    # given models for main and classifier only
    main = Script.install(workspace, roles=("main",))
    classifier = Script.install(workspace, roles=("classifier",))
    star = Script.install(workspace, roles=("*",))
    for script in (main, classifier, star):
        script.reply(script.name)
        script.reply(script.name)
    # then the review pass is answered by main's model, the judge by the classifier's, each traced by its own role
    assert complete(workspace=workspace, role="review", messages=[Message.user("x")]).text == main.name
    assert complete(workspace=workspace, role="judge", messages=[Message.user("x")]).text == classifier.name
    assert [request.role for request in main.sent + classifier.sent] == ["review", "judge"]
    # and a role of their own wins over the parent's
    review = Script.install(workspace, roles=("review",))
    review.reply(review.name)
    assert complete(workspace=workspace, role="review", messages=[Message.user("x")]).text == review.name


def test_a_reassignment_is_seen_by_the_next_call(workspace):
    assert complete(workspace=workspace, role="main", messages=[Message.user("x")]).provider == "offline"
    script = Script.install(workspace, roles=("main",))
    script.reply("now scripted")

    assert complete(workspace=workspace, role="main", messages=[Message.user("x")]).text == "now scripted"


def test_cost_uses_the_registry_prices(workspace):
    script = Script.install(workspace, input_price_per_mtok=2, output_price_per_mtok=10)
    script.reply("ok", input_tokens=1000, output_tokens=500)

    completion = complete(workspace=workspace, role="main", messages=[Message.user("x")])

    assert completion.cost == pytest.approx((1000 * 2 + 500 * 10) / 1_000_000)


def test_the_offline_model_answers_deterministically_says_it_is_offline_and_uses_no_network(workspace,
                                                                                            monkeypatch):
    request_text = [Message.user("What did we decide about the launch?")]
    first = complete(workspace=workspace, role="main", messages=request_text)
    from fathom.llm.client import _request

    request, _ = _request(workspace.pk, "main", request_text, None, None, {}, stream=False)

    def no_network(*args, **kwargs):
        raise AssertionError("the offline model opened a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    again = OfflineProvider().complete(request)

    assert first.provider == "offline" and "[offline]" in first.text
    assert "What did we decide about the launch?" in first.text
    assert again.text == first.text and again.usage == first.usage


def test_the_offline_model_follows_the_search_then_respond_policy_citing_what_it_found(workspace):
    policy = SearchThenRespond("search")
    question = [Message.user("launch date")]

    step1 = complete(workspace=workspace, role="main", messages=question, tools=[SEARCH], offline_policy=policy)
    assert step1.stop_reason is StopReason.TOOL_CALLS
    assert step1.tool_calls[0].name == "search" and step1.tool_calls[0].arguments == {"query": "launch date"}

    results = json.dumps([{"id": "a1b2c3d4", "content": "Launch moved to May 3"}, {"id": "e5f6a7b8", "content": "x"}])
    history = [*question, step1.message, Message.tool(step1.tool_calls[0].id, results)]
    step2 = complete(workspace=workspace, role="main", messages=history, tools=[SEARCH], offline_policy=policy)

    assert step2.stop_reason is StopReason.END and not step2.tool_calls
    assert "[offline]" in step2.text and "[a1b2c3d4] Launch moved to May 3" in step2.text and "[e5f6a7b8]" in step2.text
    assert complete(workspace=workspace, role="main", messages=history, tools=[SEARCH],
                    offline_policy=policy).text == step2.text


def test_the_offline_fire_policy_searches_for_the_question_and_writes_the_cards_asked_for(workspace):
    # given a fire's question, a harness note after it, and a system prompt asking for insight cards
    policy = SearchThenRespond("search", respond_tool="respond", text_argument="body", citations_argument="cited_ids",
                               cards_argument="cards", question="launch date")
    respond_tool = ToolSpec("respond", "answer", {"type": "object"})
    messages = [Message.system('At least 1 insight card(s): respond(cards=[{"kind": "insight", ...}])'),
                Message.user("launch date"), Message.user("[harness] active plan:\n1. search")]
    step1 = complete(workspace=workspace, role="main", messages=messages, tools=[SEARCH, respond_tool],
                     offline_policy=policy)
    # then it searches for the question, not the note
    assert step1.tool_calls[0].arguments == {"query": "launch date"}
    rendered = "[a1b2c3d4e5f6a7b8] 2026-05-01 10:00 · feed · Launch moved to May 3 after the review"
    history = [*messages, step1.message, Message.tool(step1.tool_calls[0].id, rendered)]
    step2 = complete(workspace=workspace, role="main", messages=history, tools=[SEARCH, respond_tool],
                     offline_policy=policy)
    # and answers with an insight card quoting the hit's content (not its heading)
    arguments = step2.tool_calls[0].arguments
    assert arguments["cited_ids"] == ["a1b2c3d4e5f6a7b8"] and "[harness]" not in arguments["body"]
    assert arguments["cards"] == [{"kind": "insight", "title": "[offline] from [a1b2c3d4e5f6a7b8]",
                                   "body": '[a1b2c3d4e5f6a7b8] holds: "Launch moved to May 3 after the review"',
                                   "citations": [{"id": "a1b2c3d4e5f6a7b8",
                                                  "quote": "Launch moved to May 3 after the review"}]}]


def test_the_offline_model_fills_a_json_schema(workspace):
    schema = {"type": "object", "required": ["kind", "confidence", "tags"], "properties": {
        "kind": {"enum": ["SIMPLE", "COMPLEX"]}, "confidence": {"type": "number", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}}, "ok": {"type": "boolean"}}}

    completion = complete(workspace=workspace, role="classifier", messages=[Message.user("x")],
                          response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": schema}})

    assert completion.json() == {"kind": "SIMPLE", "confidence": 0, "tags": [], "ok": False}


def test_a_rate_limit_is_retried_after_the_wait_it_asked_for(workspace, scripted_llm):
    scripted_llm.fail("rate_limited", "slow down", retry_after=0.3).reply("done")

    started = time.monotonic()
    completion = complete(workspace=workspace, role="main", messages=[Message.user("x")])

    assert completion.text == "done" and completion.attempts == 2
    assert time.monotonic() - started >= 0.3


def test_an_authentication_failure_is_tried_once_and_carries_the_providers_message(workspace, scripted_llm):
    scripted_llm.fail("authentication", "Incorrect API key provided").reply("never used")

    with pytest.raises(LLMAuthenticationError, match="Incorrect API key provided") as failure:
        complete(workspace=workspace, role="main", messages=[Message.user("x")])

    assert failure.value.attempts == 1 and scripted_llm.pending == 1


def test_retries_stop_at_the_maximum_number_of_attempts(workspace, scripted_llm, settings):
    settings.FATHOM_LLM_BACKOFF_SECONDS = 0.01
    for _ in range(3):
        scripted_llm.fail("rate_limited", "busy")
    scripted_llm.reply("too late")

    with pytest.raises(LLMRateLimited) as failure:
        complete(workspace=workspace, role="main", messages=[Message.user("x")], max_attempts=3)

    assert failure.value.attempts == 3 and scripted_llm.pending == 1


def test_a_retry_after_beyond_the_deadline_gives_up_at_once(workspace, scripted_llm):
    scripted_llm.fail("server_error", "overloaded", retry_after=30).reply("never")

    started = time.monotonic()
    with pytest.raises(LLMDeadlineExceeded, match="overloaded"):
        complete(workspace=workspace, role="main", messages=[Message.user("x")], deadline=2)
    assert time.monotonic() - started < 1


def test_a_streamed_call_hands_over_text_deltas_then_returns_the_whole_completion(workspace, scripted_llm):
    scripted_llm.reply("one two three", output_tokens=3)

    chunks = []
    completion = complete(workspace=workspace, role="main", messages=[Message.user("count")], stream=chunks.append)

    assert [c.text for c in chunks] == ["one ", "two ", "three"] and not any(c.done for c in chunks)
    assert completion.text == "one two three" and completion.usage.output_tokens == 3
    assert scripted_llm.sent[0].stream is True


def test_the_scripted_model_streams_in_chunks_of_the_size_asked_with_delays(workspace, scripted_llm):
    scripted_llm.reply("abcdefghij", chunk_chars=4, chunk_delay=0.01)

    chunks = []
    completion = complete(workspace=workspace, role="main", messages=[Message.user("x")], stream=chunks.append)

    assert [c.text for c in chunks] == ["abcd", "efgh", "ij"] and completion.text == "abcdefghij"
    assert len(scripted_llm.first_chunks) == 1


def test_a_callback_that_raises_abandons_the_streamed_call(workspace, scripted_llm):
    scripted_llm.reply("a b c d")

    def stop(chunk):
        raise RuntimeError("the reader went away")

    with span("trace.prompt", workspace=workspace, actor_id="t") as root:
        with pytest.raises(RuntimeError):
            complete(workspace=workspace, role="main", messages=[Message.user("x")], stream=stop)

    call = TraceEvent.objects.get(trace_id=root.trace_id, kind="llm.call.failed")
    assert "the reader went away" in call.error and scripted_llm.pending == 0


def test_a_stream_is_retried_before_it_starts_but_never_after(workspace, scripted_llm):
    scripted_llm.fail("server_error", retry_after=0).reply("a b c d", stream_error_after=2).reply("unused")

    received = []
    with pytest.raises(LLMStreamInterrupted):
        complete(workspace=workspace, role="main", messages=[Message.user("x")],
                 stream=lambda chunk: received.append(chunk.text))

    assert received == ["a ", "b "]
    assert scripted_llm.pending == 1  # the broken stream was not retried


class Recorder:
    log = []

    def __init__(self, tag):
        self.tag = tag

    def before(self, request):
        Recorder.log.append(f"before:{self.tag}")
        request.messages = [*request.messages, Message.user(f"note from {self.tag}")]

    def after(self, request, completion):
        Recorder.log.append(f"after:{self.tag}")
        from dataclasses import replace

        return replace(completion, text=f"{completion.text}+{self.tag}")


class First(Recorder):
    def __init__(self):
        super().__init__("first")


class Second(Recorder):
    def __init__(self):
        super().__init__("second")


class Answers:
    def before(self, request):
        Recorder.log.append("before:answers")
        return Completion(text="from middleware")


def test_middleware_runs_before_in_order_and_after_in_reverse_and_may_rewrite_both(workspace, scripted_llm,
                                                                                   settings):
    settings.FATHOM_MODEL_MIDDLEWARE = [f"{__name__}.First", f"{__name__}.Second"]
    Recorder.log = []
    scripted_llm.reply("model")

    completion = complete(workspace=workspace, role="main", messages=[Message.user("q")])

    assert Recorder.log == ["before:first", "before:second", "after:second", "after:first"]
    assert [m.content for m in scripted_llm.sent[0].messages] == ["q", "note from first", "note from second"]
    assert completion.text == "model+second+first"


def test_a_middleware_may_answer_without_calling_the_model(workspace, scripted_llm, settings):
    settings.FATHOM_MODEL_MIDDLEWARE = [f"{__name__}.First", f"{__name__}.Answers", f"{__name__}.Second"]
    Recorder.log = []

    completion = complete(workspace=workspace, role="main", messages=[Message.user("q")])

    assert completion.text == "from middleware+first"
    assert Recorder.log == ["before:first", "before:answers", "after:first"]
    assert scripted_llm.sent == []


@pytest.mark.slow
def test_a_script_written_here_is_answered_in_another_process(transactional_db, workspace):
    script = Script.install(workspace, roles=("main",))
    script.reply("from the script")
    code = (
        "import django, json; django.setup();"
        "from fathom.llm import complete, Message;"
        f"c = complete(workspace={workspace.pk}, role='main', messages=[Message.user('hello from a child')]);"
        "print(json.dumps([c.text, c.provider]))"
    )
    env = worker_env()
    connection.close()

    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=60)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["from the script", "scripted"]
    assert script.sent[0].last_user_text == "hello from a child"


def test_an_assignment_needs_a_valid_role(workspace):
    from django.core.exceptions import ValidationError

    model = model_create(workspace=workspace, name="m1", provider="offline", model="offline")
    with pytest.raises(ValidationError):
        model_assign(workspace=workspace, role="Not A Role", model=model)
