"""Streaming and the Responses API: `complete(..., stream=callback)` through the real openai and
anthropic SDKs against a local server that writes its server-sent events one at a time.

The paused streams prove the chunks reach the caller as they arrive: the server sends the first
event, then waits until the caller has received it before it sends the rest (a client that read
the whole stream before handing anything over would never get it, and the test would fail)."""

import pytest
from django.core.exceptions import ValidationError

from fathom.llm import Message, StopReason, ToolCall, ToolSpec, complete
from fathom.llm.errors import LLMStreamInterrupted
from fathom.llm.services import model_create
from fathom.tracing import span
from fathom.tracing.models import TraceEvent
from tests.fathom.wire import (
    chunk,
    function_call,
    message,
    output_text,
    response,
    response_events,
    use,
)

SEARCH = ToolSpec("search", "Search the lake", {"type": "object", "properties": {"query": {"type": "string"}},
                                                "required": ["query"]})


def openai_chat_events(deltas):
    return ([chunk({"role": "assistant", "content": deltas[0]})] + [chunk({"content": d}) for d in deltas[1:]]
            + [chunk({}, finish="stop"), chunk(None, usage=(11, 5)), (None, "[DONE]")])


def anthropic_events(deltas):
    start = {"type": "message_start", "message": {**message([]), "stop_reason": None,
                                                  "usage": {"input_tokens": 11, "output_tokens": 1}}}
    return ([("message_start", start),
             ("content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}})]
            + [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": d}}) for d in deltas]
            + [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": 5}}),
               ("message_stop", {"type": "message_stop"})])


PROVIDERS = {
    # name: (provider, path under the server, registry api, the events of a streamed text answer, first event)
    "openai-chat": ("openai", "/v1", "chat_completions", openai_chat_events, 1),
    "openai-responses": ("openai", "/v1", "responses", lambda d: response_events(d, usage=(11, 5, 0)), 2),
    "openai-compatible": ("openai-compatible", "/ollama/v1", "chat_completions", openai_chat_events, 1),
    "anthropic": ("anthropic", "", "chat_completions", anthropic_events, 3),
}


@pytest.mark.parametrize("name", PROVIDERS)
def test_each_provider_hands_over_deltas_as_they_arrive_and_returns_the_whole_answer(workspace, wire, name):
    provider, path, api, events, first_delta_at = PROVIDERS[name]
    use(workspace, provider, wire.url + path, api=api)
    deltas = ["The tide ", "turns ", "at noon."]
    # The server stops after the event carrying the first delta until the caller has it.
    wire.respond_stream(events(deltas), pause_after=first_delta_at)
    received = []
    before_the_rest = []

    def on_chunk(piece):
        received.append(piece.text)
        if len(received) == 1:
            before_the_rest.append(len(wire.requests) == 1 and not wire.resumed.is_set())
            wire.resume()

    with span("trace.prompt", workspace=workspace, actor_id="test") as root:
        completion = complete(workspace=workspace, role="main", messages=[Message.user("When?")], stream=on_chunk)

    assert received == deltas and before_the_rest == [True]
    assert completion.text == "The tide turns at noon." and completion.stop_reason is StopReason.END
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (11, 5)
    assert completion.cost == pytest.approx((11 * 1 + 5 * 2) / 1_000_000)  # priced as an unstreamed call
    assert wire.bodies[0]["stream"] is True
    done = TraceEvent.objects.get(trace_id=root.trace_id, kind="llm.call.completed")
    assert done.payload["stream"] is True and done.output_tokens == 5  # traced as any call


def test_the_responses_api_is_chosen_per_model_in_the_registry(workspace, wire):
    use(workspace, "openai", wire.url + "/v1", api="responses")
    wire.respond(200, response([output_text("Hello from Responses")], usage=(9, 3, 4)),
                 headers={"x-request-id": "req_r"})

    completion = complete(workspace=workspace, role="main", temperature=0.2,
                          messages=[Message.system("Be brief."), Message.user("Hi")])

    path, body = wire.requests[0][1], wire.bodies[0]
    assert path == "/v1/responses"
    assert body["input"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert body["temperature"] == 0.2 and body["store"] is False and body["max_output_tokens"] == 4096
    assert completion.text == "Hello from Responses" and completion.request_id == "req_r"
    assert (completion.usage.input_tokens, completion.usage.output_tokens, completion.usage.cached_tokens) == (9, 3, 4)


def test_responses_tool_calls_and_their_results_round_trip(workspace, wire):
    use(workspace, "openai", wire.url + "/v1", api="responses")
    wire.respond(200, response([function_call("search", {"query": "tides"}, call_id="call_t")]))
    wire.respond(200, response([output_text("Noon.")]))
    messages = [Message.user("When is the tide?")]

    first = complete(workspace=workspace, role="main", messages=messages, tools=[SEARCH],
                     tool_choice={"type": "function", "function": {"name": "search"}})
    messages += [first.message, Message.tool("call_t", "high tide at noon")]
    second = complete(workspace=workspace, role="main", messages=messages, tools=[SEARCH])

    assert first.tool_calls == (ToolCall("call_t", "search", {"query": "tides"}),)
    assert first.stop_reason is StopReason.TOOL_CALLS and second.text == "Noon."
    sent = wire.bodies[0]
    assert sent["tools"][0] | {"type": "function", "name": "search"} == sent["tools"][0]
    assert sent["tool_choice"] == {"type": "function", "name": "search"}
    assert wire.bodies[1]["input"][1:] == [
        {"type": "function_call", "call_id": "call_t", "name": "search", "arguments": '{"query": "tides"}'},
        {"type": "function_call_output", "call_id": "call_t", "output": "high tide at noon"},
    ]


def test_responses_json_schema_output_and_a_cut_answer(workspace, wire):
    use(workspace, "openai", wire.url + "/v1", api="responses")
    wire.respond(200, response([output_text('{"kind": "SIMPLE"}')]))
    wire.respond(200, response([output_text("The answer was cu")], status="incomplete", incomplete="max_output_tokens"))
    schema = {"type": "object", "properties": {"kind": {"type": "string"}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "classification", "schema": schema,
                                                              "strict": True}}

    answer = complete(workspace=workspace, role="main", messages=[Message.user("x")], response_format=response_format)
    cut = complete(workspace=workspace, role="main", messages=[Message.user("y")])

    assert answer.json() == {"kind": "SIMPLE"}
    assert wire.bodies[0]["text"] == {"format": {"type": "json_schema", "name": "classification", "schema": schema,
                                                 "strict": True}}
    assert cut.stop_reason is StopReason.MAX_TOKENS


def test_a_streamed_responses_call_hands_over_its_function_calls(workspace, wire):
    use(workspace, "openai", wire.url + "/v1", api="responses")
    wire.respond_stream(response_events(["Let me ", "look."], calls=[function_call("search", {"query": "x"})]))

    chunks = []
    completion = complete(workspace=workspace, role="main", messages=[Message.user("x")], tools=[SEARCH],
                          stream=chunks.append)

    assert [c.text for c in chunks if c.text] == ["Let me ", "look."]
    assert [c.tool_call for c in chunks if c.tool_call] == [ToolCall("call_r1", "search", {"query": "x"})]
    assert completion.tool_calls == (ToolCall("call_r1", "search", {"query": "x"}),)
    assert completion.stop_reason is StopReason.TOOL_CALLS and completion.text == "Let me look."


def test_the_responses_api_is_refused_for_a_provider_that_has_none(db):
    with pytest.raises(ValidationError, match="Responses API"):
        model_create(workspace=None, name="claude-responses", provider="anthropic", model="claude", api="responses")


def test_a_responses_stream_that_fails_after_it_began_is_interrupted_not_retried(workspace, wire, settings):
    settings.FATHOM_LLM_BACKOFF_SECONDS = 0.05
    use(workspace, "openai", wire.url + "/v1", api="responses")
    events = response_events(["partial "])[:2]  # created, one delta; then the model fails
    failed = {**response([], status="failed"), "error": {"code": "server_error", "message": "the model fell over"}}
    wire.respond_stream([*events, ("response.failed", {"type": "response.failed", "sequence_number": 2,
                                                        "response": failed})])
    received = []

    with pytest.raises(LLMStreamInterrupted, match="the model fell over"):
        complete(workspace=workspace, role="main", messages=[Message.user("x")],
                 stream=lambda chunk: received.append(chunk.text))

    assert received == ["partial "] and len(wire.requests) == 1
