"""`fathom llm try`: a tool-calling exchange with a configured model, printed with its trace tree."""

import json
import socket
import sys
from contextlib import contextmanager
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from fathom.llm.cli import calculate
from fathom.tracing.models import TraceEvent
from tests.fathom.wire import chat, message, openai_error

KEY = "sk-cli-test-00112233445566778899LAST"


def run(*args) -> str:
    out = StringIO()
    call_command("fathom", "llm", "try", *args, stdout=out)
    return out.getvalue()


def test_the_offline_model_calls_the_tool_and_answers_with_no_key_and_no_network(workspace, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the offline exchange opened a connection")

    monkeypatch.setattr(socket, "create_connection", no_network)

    output = run("--provider", "offline", "--workspace", workspace.slug)

    lines = output.splitlines()
    assert lines[0] == "reply: [offline] The calculate tool says: 1234 * 5678 + 9 = 7006661."
    trace_id = lines[2].split()[1]
    assert lines[2] == f"trace {trace_id} [ok]"
    assert [line.split()[0] for line in lines[3:7]] == ["trace.prompt", "llm.call", "worker.tool", "llm.call"]
    assert "calculate -> 1234 * 5678 + 9 = 7006661" in lines[5]
    assert "model calls by cli:llm-try: 2 (0 failed)" in output and "totals: 2 model call(s), 1 tool call(s)" in output
    assert TraceEvent.objects.filter(workspace=workspace, trace_id=trace_id, name="llm.call").count() == 4
    assert run("--provider", "offline", "--workspace", workspace.slug).splitlines()[0] == lines[0]


def test_an_openai_model_calls_the_tool_reads_its_result_and_answers(workspace, wire, settings):
    settings.OPENAI_API_KEY = KEY
    call = {"id": "call_9", "type": "function", "function": {"name": "calculate",
                                                             "arguments": '{"expression": "6 * 7"}'}}
    wire.respond(200, chat(None, tool_calls=[call], finish="tool_calls", usage=(50, 12, 0)))
    wire.respond(200, chat("Six times seven is 42.", usage=(80, 8, 0)))

    output = run("--provider", "openai", "--model", "gpt-test", "--base-url", wire.url + "/v1",
                 "--workspace", workspace.slug, "--prompt", "What is 6 * 7?")

    assert output.splitlines()[0] == "reply: Six times seven is 42."
    assert "openai:gpt-test in=50 out=12" in output and "openai:gpt-test in=80 out=8" in output
    assert "totals: 2 model call(s), 1 tool call(s), 130 input / 20 output tokens" in output
    second = wire.bodies[1]["messages"]
    assert second[-1] == {"role": "tool", "tool_call_id": "call_9", "content": "6 * 7 = 42"}
    assert wire.bodies[0]["tools"][0]["function"]["name"] == "calculate"
    assert wire.requests[0][2]["authorization"] == f"Bearer {KEY}" and KEY not in output


def test_an_anthropic_model_through_the_same_command(workspace, wire, settings):
    settings.ANTHROPIC_API_KEY = KEY
    wire.respond(200, message([{"type": "tool_use", "id": "toolu_1", "name": "calculate",
                                "input": {"expression": "2 ** 10"}}], stop="tool_use"))
    wire.respond(200, message([{"type": "text", "text": "It is 1024."}]))

    output = run("--provider", "anthropic", "--model", "claude-test", "--base-url", wire.url,
                 "--workspace", workspace.slug)

    assert output.splitlines()[0] == "reply: It is 1024."
    tool_result = wire.bodies[1]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "toolu_1"
    assert json.dumps(tool_result).count("2 ** 10 = 1024") == 1


def test_failures_are_clear_command_errors(workspace, wire, settings):
    settings.OPENAI_API_KEY = KEY
    wire.respond(*openai_error(401, "Incorrect API key provided"))

    with pytest.raises(CommandError, match="Incorrect API key provided"):
        run("--provider", "openai", "--model", "gpt-test", "--base-url", wire.url + "/v1", "--workspace",
            workspace.slug)
    with pytest.raises(CommandError, match="--model is required"):
        run("--provider", "openai", "--workspace", workspace.slug)
    with pytest.raises(CommandError, match="no-such-ws"):
        run("--provider", "offline", "--workspace", "no-such-ws")
    with pytest.raises(CommandError, match="no model named"):
        run("--registry", "nothing-here", "--workspace", workspace.slug)


@pytest.mark.parametrize("expression, expected", [("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("-4 / 2", -2.0),
                                                  ("2 ** 8", 256)])
def test_the_calculator_does_arithmetic(expression, expected):
    assert calculate(expression) == expected


@pytest.mark.parametrize("expression", ["__import__('os')", "x + 1", "2 ** 1000", "[1, 2]"])
def test_the_calculator_refuses_anything_else(expression):
    with pytest.raises(ValueError):
        calculate(expression)


def test_a_registry_model_answers_with_its_stored_key_which_is_never_printed(workspace, wire):
    from fathom.llm.services import model_create

    model_create(workspace=workspace, name="wired", provider="openai-compatible", model="llama-test", base_url=wire.url + "/v1",
                 api_key=KEY, input_price_per_mtok=1, output_price_per_mtok=1)
    call = {"id": "call_1", "type": "function", "function": {"name": "calculate", "arguments": '{"expression": "1+1"}'}}
    wire.respond(200, chat(None, tool_calls=[call], finish="tool_calls", usage=(1000, 0, 0)))
    wire.respond(200, chat("Two.", usage=(1000, 1000, 0)))

    output = run("--registry", "wired", "--workspace", workspace.slug)

    assert output.splitlines()[0] == "reply: Two."
    assert "openai-compatible:llama-test" in output and "$0.003000" in output  # 3,000 tokens at $1 / 1M
    assert wire.requests[0][2]["authorization"] == f"Bearer {KEY}" and KEY not in output and KEY[-4:] not in output


def registry_command(*args, key: str | None = None) -> str:
    out = StringIO()
    with _stdin(key):
        call_command("fathom", "llm", *args, stdout=out)
    return out.getvalue()


@contextmanager
def _stdin(text):
    saved = sys.stdin
    sys.stdin = StringIO(f"{text}\n" if text is not None else "")
    try:
        yield
    finally:
        sys.stdin = saved


def test_the_registry_from_the_shell_registers_tests_assigns_and_deletes_in_one_workspace(
        workspace, other_workspace, wire):
    ws = ("--workspace", workspace.slug)
    registry_command("models", "add", "local", "openai-compatible", "llama-test", "--base-url", f"{wire.url}/v1",
                     "--key", *ws, key=KEY)
    assert f"local\topenai-compatible:llama-test\t{wire.url}/v1\t…{KEY[-4:]}" in registry_command("models", "list", *ws)
    assert "local" not in registry_command("models", "list", "--workspace", other_workspace.slug)

    wire.respond(200, chat("Hello there."))
    tested = registry_command("models", "test", "local", *ws)
    assert tested.startswith("reply: Hello there.") and "llm.call [ok]" in tested and KEY not in tested
    registry_command("roles", "assign", "main", "local", *ws)
    assert registry_command("roles", "list", *ws).strip() == "main\tlocal"
    with pytest.raises(CommandError, match="no LLM model named 'local'"):
        registry_command("roles", "assign", "main", "local", "--workspace", other_workspace.slug)
    with pytest.raises(CommandError, match="FATHOM_MODEL_BASE_URLS"):
        registry_command("models", "add", "far", "openai", "gpt-4o-mini", "--base-url", "https://far.example/v1", *ws)
    registry_command("models", "delete", "local", *ws)
    assert registry_command("roles", "list", *ws).strip() == ""
    audit = TraceEvent.objects.filter(workspace=workspace, kind__startswith="llm.registry.", kind__endswith=".completed")
    assert audit.count() == 3 and all(e.actor_id.startswith("operator:login:") for e in audit)
