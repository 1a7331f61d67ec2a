"""A reasoning model's thinking through `complete`: asked for with `thinking_options`, read into
`Completion.thinking` (never its text) by the real `anthropic` and `openai` SDKs from a local server
speaking their wire protocols. Streamed answers are in tests/festinger/test_proxy_thinking.py."""

import pytest

from fathom.llm import Message, ToolCall, ToolSpec, complete
from fathom.llm.providers import thinking_options
from tests.fathom.wire import chat, message, use


def test_anthropics_thinking_blocks_are_the_completions_thinking(workspace, wire):
    use(workspace, "anthropic", wire.url)
    wire.respond(200, message([{"type": "thinking", "thinking": "Six times seven.", "signature": "c2ln"},
                               {"type": "text", "text": "42."}]))
    completion = complete(workspace=workspace, role="main", messages=[Message.user("6 x 7?")],
                          max_tokens=1000, temperature=0.2, **thinking_options("anthropic", "low"))
    assert completion.thinking == "Six times seven." and completion.text == "42."
    sent = wire.bodies[0]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert sent["max_tokens"] == 2024 and "temperature" not in sent  # room for the answer beyond the budget


def test_anthropic_goes_on_with_a_turn_of_tool_use_or_a_json_schema_without_thinking(workspace, wire):
    # Anthropic refuses thinking there: the tool turn's signed thinking is not kept, a schema forces a tool.
    use(workspace, "anthropic", wire.url)
    wire.respond(200, message([{"type": "text", "text": "It is sunny."}]))
    wire.respond(200, message([{"type": "tool_use", "id": "t1", "name": "respond_with_json", "input": {"n": 42}}]))
    weather = ToolSpec("weather", "The weather", {"type": "object", "properties": {}})
    messages = [Message.user("Weather?"), Message.assistant("", [ToolCall("t1", "weather", {})]),
                Message.tool("t1", "sunny")]
    think = thinking_options("anthropic", "medium")
    assert complete(workspace=workspace, role="main", messages=messages, tools=[weather], **think).text == "It is sunny."
    schema = {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object"}}}
    assert complete(workspace=workspace, role="main", messages=[Message.user("6 x 7?")], response_format=schema,
                    **think).json() == {"n": 42}
    assert ["thinking" in body for body in wire.bodies] == [False, False]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_an_openai_compatible_servers_reasoning_is_the_completions_thinking(workspace, wire, field):
    use(workspace, "openai-compatible", wire.url + "/v1")
    body = chat("42.")
    body["choices"][0]["message"][field] = "Six times seven."
    wire.respond(200, body)
    completion = complete(workspace=workspace, role="main", messages=[Message.user("6 x 7?")],
                          **thinking_options("openai-compatible", "high"))
    assert completion.thinking == "Six times seven." and completion.text == "42."
    assert wire.bodies[0]["reasoning_effort"] == "high"


def test_a_scripted_model_thinks_what_its_script_says(workspace, scripted_llm):
    script = scripted_llm
    script.reply("42.", thinking="Six times seven.")
    completion = complete(workspace=workspace, role="main", messages=[Message.user("6 x 7?")],
                          **thinking_options("scripted", "medium"))
    assert (completion.thinking, completion.text) == ("Six times seven.", "42.")
    assert script.sent[0].options["think"] == "medium"


def test_the_offline_model_cannot_think():
    assert thinking_options("offline", "high") is None
    with pytest.raises(ValueError):
        thinking_options("anthropic", "extreme")
