"""The openai, openai-compatible and anthropic providers: the real SDKs against a local server that
speaks each wire protocol."""

import time

import pytest

from fathom.llm import Message, StopReason, ToolCall, ToolSpec, complete
from fathom.llm.errors import (
    LLMAuthenticationError,
    LLMDeadlineExceeded,
    LLMEmptyCompletion,
    LLMModelNotFound,
    LLMServerError,
    LLMStreamInterrupted,
)
from fathom.tracing import span
from fathom.tracing.models import TraceEvent
from tests.fathom.wire import KEY, anthropic_error, chat, chunk, message, openai_error, use

SEARCH = ToolSpec("search", "Search the lake", {"type": "object", "properties": {"query": {"type": "string"}},
                                                "required": ["query"]})


@pytest.fixture(autouse=True)
def quick_backoff(settings):
    settings.FATHOM_LLM_BACKOFF_SECONDS = 0.05
    settings.FATHOM_LLM_MAX_BACKOFF_SECONDS = 0.2


def test_openai_plain_text(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.respond(200, chat("Hello there", usage=(10, 2, 4)), headers={"x-request-id": "req_abc"})

    completion = complete(workspace=workspace, role="main", messages=[Message.system("Be kind."), Message.user("Hi")],
                          temperature=0.1, max_tokens=50)

    assert completion.text == "Hello there" and completion.stop_reason is StopReason.END
    assert (completion.usage.input_tokens, completion.usage.output_tokens, completion.usage.cached_tokens) == (10, 2, 4)
    assert completion.request_id == "req_abc" and completion.provider == "openai"
    assert completion.cost == pytest.approx((10 * 1 + 2 * 2) / 1e6)
    method, path, headers, body = wire.requests[0]
    assert path == "/v1/chat/completions" and headers["authorization"] == f"Bearer {KEY}"
    assert body["messages"] == [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}]
    assert body["temperature"] == 0.1 and body["max_completion_tokens"] == 50 and body["model"] == "test-model"


@pytest.mark.parametrize("streamed", [False, True])
def test_an_empty_completion_is_a_server_error_retried_then_raised_and_traced_as_failed(
        workspace, wire, settings, streamed):
    use(workspace, "openai-compatible", wire.url + "/v1")
    wire.always(200, chat(None, finish="stop"))  # neither text nor a tool call, every time

    with span("trace.prompt", workspace=workspace, actor_id="t") as root, \
            pytest.raises(LLMEmptyCompletion) as raised:
        complete(workspace=workspace, role="main", messages=[Message.user("Hi")], tools=[SEARCH],
                 stream=(lambda chunk: None) if streamed else None)

    assert isinstance(raised.value, LLMServerError) and raised.value.retryable
    assert len(wire.requests) == raised.value.attempts == settings.FATHOM_LLM_MAX_ATTEMPTS
    assert all(body.get("stream", False) is streamed for body in wire.bodies)
    call = TraceEvent.objects.get(trace_id=root.trace_id, kind="llm.call.failed")
    assert (call.payload["code"], call.status) == ("llm_empty_completion", "error")
    assert "LLMEmptyCompletion" in call.error and "neither text nor a tool call" in call.error
    assert TraceEvent.objects.filter(trace_id=root.trace_id, kind="llm.call.retry").count() == \
        settings.FATHOM_LLM_MAX_ATTEMPTS - 1


def test_an_empty_completion_then_an_answer_is_the_answer(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.respond(200, chat("")).respond(200, chat("   ")).respond(200, chat("Here."))

    completion = complete(workspace=workspace, role="main", messages=[Message.user("Hi")])

    assert (completion.text, completion.attempts, len(wire.requests)) == ("Here.", 3, 3)


def test_openai_tool_calls_and_the_tool_result_round_trip(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.respond(200, chat(None, [{"id": "call_1", "type": "function",
                                   "function": {"name": "search", "arguments": '{"query": "launch"}'}}], "tool_calls"))
    wire.respond(200, chat("It moved to May [ab12]."))

    first = complete(workspace=workspace, role="main", messages=[Message.user("When?")], tools=[SEARCH])
    history = [Message.user("When?"), first.message, Message.tool("call_1", '[{"id": "ab12"}]')]
    second = complete(workspace=workspace, role="main", messages=history, tools=[SEARCH])

    assert first.stop_reason is StopReason.TOOL_CALLS
    assert first.tool_calls == (ToolCall("call_1", "search", {"query": "launch"}),)
    assert second.text == "It moved to May [ab12]."
    sent = wire.bodies[1]
    assert sent["tools"][0] == {"type": "function", "function": {
        "name": "search", "description": "Search the lake", "parameters": dict(SEARCH.parameters)}}
    assert sent["messages"][1]["tool_calls"][0]["function"] == {"name": "search", "arguments": '{"query": "launch"}'}
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": '[{"id": "ab12"}]'}


def test_openai_json_schema_output(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.respond(200, chat('{"kind": "SIMPLE"}'))
    response_format = {"type": "json_schema", "json_schema": {"name": "classification", "strict": True, "schema": {
        "type": "object", "properties": {"kind": {"enum": ["SIMPLE", "COMPLEX"]}}, "required": ["kind"],
        "additionalProperties": False}}}

    completion = complete(workspace=workspace, role="main", messages=[Message.user("x")],
                          response_format=response_format)

    assert completion.json() == {"kind": "SIMPLE"}
    assert wire.bodies[0]["response_format"] == response_format


def test_openai_streaming_text_and_tool_calls(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.respond_stream([
        chunk({"role": "assistant", "content": "Let me "}),
        chunk({"content": "look."}),
        chunk({"tool_calls": [{"index": 0, "id": "call_9", "type": "function",
                               "function": {"name": "search", "arguments": '{"que'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ry": "x"}'}}]}, finish="tool_calls"),
        chunk(None, usage=(20, 7)),
        (None, "[DONE]"),
    ])

    chunks = []
    final = complete(workspace=workspace, role="main", messages=[Message.user("x")], tools=[SEARCH],
                     stream=chunks.append)

    assert [c.text for c in chunks if c.text] == ["Let me ", "look."]
    assert [c.tool_call for c in chunks if c.tool_call] == [ToolCall("call_9", "search", {"query": "x"})]
    assert final.text == "Let me look." and final.stop_reason is StopReason.TOOL_CALLS
    assert (final.usage.input_tokens, final.usage.output_tokens) == (20, 7)
    assert wire.bodies[0]["stream"] is True and wire.bodies[0]["stream_options"] == {"include_usage": True}


def test_a_429_with_retry_after_is_waited_out_then_succeeds(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.respond(*openai_error(429, "Rate limit reached for gpt-4o-mini"), headers={"Retry-After": "1"})
    wire.respond(200, chat("finally"))

    started = time.monotonic()
    completion = complete(workspace=workspace, role="main", messages=[Message.user("x")])
    waited = time.monotonic() - started

    assert completion.text == "finally" and completion.attempts == 2 and len(wire.requests) == 2
    assert waited >= 1.0


def test_a_500_is_retried_until_the_deadline_then_fails_with_the_providers_message(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.always(*openai_error(500, "The server had an error while processing your request"))

    started = time.monotonic()
    with pytest.raises(LLMDeadlineExceeded, match="The server had an error") as failure:
        complete(workspace=workspace, role="main", messages=[Message.user("x")], deadline=1.0, max_attempts=100)
    elapsed = time.monotonic() - started

    assert len(wire.requests) >= 3 and failure.value.attempts == len(wire.requests)
    assert elapsed < 1.5


def test_a_401_is_tried_once_and_carries_the_providers_message(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.always(*openai_error(401, "Incorrect API key provided: sk-wire...KEYS", "invalid_request_error"))

    with pytest.raises(LLMAuthenticationError, match="Incorrect API key provided") as failure:
        complete(workspace=workspace, role="main", messages=[Message.user("x")])

    assert len(wire.requests) == 1 and failure.value.http_status == 401 and failure.value.attempts == 1


def test_a_404_model_is_not_retried(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.always(*openai_error(404, "The model `nope` does not exist"))

    with pytest.raises(LLMModelNotFound, match="does not exist"):
        complete(workspace=workspace, role="main", messages=[Message.user("x")])
    assert len(wire.requests) == 1


def test_a_stream_that_fails_before_its_first_chunk_is_retried_but_not_once_started(workspace, wire):
    use(workspace, "openai", wire.url + "/v1")
    wire.respond(*openai_error(503, "overloaded"))
    wire.respond_stream([chunk({"content": "partial "}), (None, '{"error": {"message": "upstream died"}}')])

    received = []
    with pytest.raises(LLMStreamInterrupted, match="upstream died"):
        complete(workspace=workspace, role="main", messages=[Message.user("x")],
                 stream=lambda piece: received.append(piece.text))

    assert received == ["partial "] and len(wire.requests) == 2


def test_the_openai_compatible_provider_calls_the_base_url_without_a_key(workspace, wire):
    use(workspace, "openai-compatible", wire.url + "/ollama/v1", model="llama3.2", api_key="")
    wire.respond(200, chat("local hello"))

    completion = complete(workspace=workspace, role="main", messages=[Message.user("hi")], max_tokens=20)

    assert completion.text == "local hello" and completion.provider == "openai-compatible"
    _, path, _, body = wire.requests[0]
    assert path == "/ollama/v1/chat/completions" and body["model"] == "llama3.2" and body["max_tokens"] == 20


def test_ollama_host_is_the_default_base_url(workspace, wire, settings):
    settings.OLLAMA_HOST = wire.url.removeprefix("http://")
    use(workspace, "openai-compatible", "", model="llama3.2", api_key="")
    wire.respond(200, chat("via OLLAMA_HOST"))

    assert complete(workspace=workspace, role="main", messages=[Message.user("hi")]).text == "via OLLAMA_HOST"
    assert wire.requests[0][1] == "/v1/chat/completions"


def test_anthropic_plain_text_with_system_and_cached_usage(workspace, wire):
    use(workspace, "anthropic", wire.url, model="claude-test")
    wire.respond(200, message([{"type": "text", "text": "Bonjour"}], usage={
        "input_tokens": 5, "output_tokens": 3, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0}),
        headers={"request-id": "req_ant"})

    completion = complete(workspace=workspace, role="main", messages=[Message.system("French."), Message.user("Hi")],
                          temperature=0.3)

    assert completion.text == "Bonjour" and completion.provider == "anthropic" and completion.request_id == "req_ant"
    assert (completion.usage.input_tokens, completion.usage.cached_tokens, completion.usage.output_tokens) == (105, 100, 3)
    _, path, headers, body = wire.requests[0]
    assert path == "/v1/messages" and KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")), headers
    assert body["system"] == "French." and body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert body["temperature"] == 0.3 and body["max_tokens"] == 4096


def test_anthropic_tool_use_and_results_merged_into_one_user_turn(workspace, wire):
    use(workspace, "anthropic", wire.url, model="claude-test")
    wire.respond(200, message([{"type": "text", "text": "Searching."},
                               {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"query": "a"}},
                               {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"query": "b"}}],
                              stop="tool_use"))
    wire.respond(200, message([{"type": "text", "text": "Done [x1]."}]))

    first = complete(workspace=workspace, role="main", messages=[Message.user("find")], tools=[SEARCH])
    history = [Message.user("find"), first.message, Message.tool("toolu_1", "r1"), Message.tool("toolu_2", "r2")]
    second = complete(workspace=workspace, role="main", messages=history, tools=[SEARCH])

    assert first.stop_reason is StopReason.TOOL_CALLS and first.text == "Searching."
    assert [c.arguments for c in first.tool_calls] == [{"query": "a"}, {"query": "b"}]
    assert second.text == "Done [x1]."
    sent = wire.bodies[1]
    assert sent["tools"] == [{"name": "search", "description": "Search the lake", "input_schema": dict(SEARCH.parameters)}]
    assert [turn["role"] for turn in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r1"},
                                              {"type": "tool_result", "tool_use_id": "toolu_2", "content": "r2"}]


def test_anthropic_json_schema_output_through_a_forced_tool(workspace, wire):
    use(workspace, "anthropic", wire.url, model="claude-test")
    wire.respond(200, message([{"type": "tool_use", "id": "toolu_j", "name": "respond_with_json",
                                "input": {"kind": "COMPLEX"}}], stop="tool_use"))
    schema = {"type": "object", "properties": {"kind": {"enum": ["SIMPLE", "COMPLEX"]}}}

    completion = complete(workspace=workspace, role="main", messages=[Message.user("x")],
                          response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": schema}})

    assert completion.json() == {"kind": "COMPLEX"} and completion.stop_reason is StopReason.END
    assert wire.bodies[0]["tool_choice"] == {"type": "tool", "name": "respond_with_json"}


def test_anthropic_streaming_text_and_tool_use(workspace, wire):
    use(workspace, "anthropic", wire.url, model="claude-test")
    start = {"type": "message_start", "message": {**message([]), "stop_reason": None,
                                                  "usage": {"input_tokens": 12, "output_tokens": 1}}}
    wire.respond_stream([
        ("message_start", start),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "On "}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "it."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_s", "name": "search", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
            "type": "input_json_delta", "partial_json": '{"query": '}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
            "type": "input_json_delta", "partial_json": '"tides"}'}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ])

    chunks = []
    final = complete(workspace=workspace, role="main", messages=[Message.user("x")], tools=[SEARCH],
                     stream=chunks.append)

    assert [c.text for c in chunks if c.text] == ["On ", "it."]
    assert [c.tool_call for c in chunks if c.tool_call] == [ToolCall("toolu_s", "search", {"query": "tides"})]
    assert final.stop_reason is StopReason.TOOL_CALLS and final.text == "On it."
    assert (final.usage.input_tokens, final.usage.output_tokens) == (12, 9)


def test_anthropic_overloaded_is_retried_and_401_is_not(workspace, wire):
    use(workspace, "anthropic", wire.url, model="claude-test")
    wire.respond(*anthropic_error(529, "Overloaded", "overloaded_error"))
    wire.respond(200, message([{"type": "text", "text": "ok"}]))
    wire.respond(*anthropic_error(401, "invalid x-api-key", "authentication_error"))

    assert complete(workspace=workspace, role="main", messages=[Message.user("x")]).attempts == 2
    with pytest.raises(LLMAuthenticationError, match="invalid x-api-key"):
        complete(workspace=workspace, role="main", messages=[Message.user("x")])
    assert len(wire.requests) == 3


def test_a_model_without_a_key_says_where_to_set_it(workspace, wire, settings):
    settings.OPENAI_API_KEY = ""
    use(workspace, "openai", wire.url + "/v1", api_key="")

    from fathom.llm.errors import LLMNotConfigured

    with pytest.raises(LLMNotConfigured, match="OPENAI_API_KEY"):
        complete(workspace=workspace, role="main", messages=[Message.user("x")])
    assert wire.requests == []
