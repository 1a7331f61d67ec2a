"""The MCP server of a whole `fathom up` stack (what `make run` starts: web, proxy, workers, beat, on
a data dir of its own, no model configured so the offline model answers): the official MCP client
over HTTP at `/mcp` and over stdio (`fathom mcp` on the stack's data dir) lists the tools, remembers
three notes, finds them, and asks a question answered through the quality harness, with its verdict."""

import sys

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import REPO_ROOT
from tests.fathom.stack import Stack, fathom, free_port, stack_env, stack_root
from tests.mcp.conftest import TOOLS, text_of

NOTES = ("The rover crossed the dune at dawn.", "Dust storm warning for the rover team.",
         "The rover's left wheel squeaks after the dune crossing.")

pytestmark = [pytest.mark.slow, pytest.mark.worker]


@pytest.fixture
def stack_dir():
    with stack_root() as path:
        yield path


def test_an_mcp_client_uses_a_running_stack_over_http_and_stdio(stack_dir, monkeypatch):
    # given `fathom up` with the quality harness on (as a fresh install has it), and an operator's key
    monkeypatch.setenv("FATHOM_QUALITY_DEFAULT_ENABLED", "true")
    stack = Stack(stack_dir, free_port())
    try:
        stack.wait_healthy(timeout=240)
        key = fathom(stack_dir, "apikey", "create", "--workspace", "default", "--role", "operator"
                     ).stdout.strip().splitlines()[-1]
        stdio = StdioServerParameters(command=sys.executable, cwd=REPO_ROOT, env={**stack_env(stack_dir),
                                                                                    "FATHOM_API_KEY": key},
                                      args=["manage.py", "fathom", "mcp", "--workspace", "default"])

        async def scenario():
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http, \
                    Client(streamable_http_client(f"http://127.0.0.1:{stack.port}/mcp", http_client=http)) as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                ids = [(await client.call_tool("remember", {"content": note})).structured_content["id"]
                       for note in NOTES]
                found = await client.call_tool("search", {"query": "rover dune", "mode": "text"})
                answered = await client.call_tool("ask", {"question": "What happened to the rover at the dune?",
                                                          "wait_seconds": 180})
            async with Client(stdio) as client:
                found_over_stdio = await client.call_tool("search", {"query": "rover wheel", "mode": "text"})
                viewed = await client.call_tool("view_delta", {"id": ids[0]})
            return tools, ids, found, answered, found_over_stdio, viewed

        tools, ids, found, answered, found_over_stdio, viewed = anyio.run(scenario)
    finally:
        stack.close()
    # then both transports serve the tools over the stack's lake
    assert tools == TOOLS
    assert {row["id"] for row in found.structured_content["rows"]} >= set(ids[:2])
    assert ids[2] in {row["id"] for row in found_over_stdio.structured_content["rows"]}
    assert viewed.structured_content["content"] == NOTES[0]
    # and the question is answered by a fire through the quality harness: an answer, checked, citing the lake
    assert not answered.is_error, text_of(answered)
    answer = answered.structured_content
    assert answer["status"] == "finished" and answer["answer"]
    assert answer["verdict"]["status"] in ("passed", "degraded")
    assert answer["citations"] and {c["id"] for c in answer["citations"]} <= set(ids)
