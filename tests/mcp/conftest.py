"""The official MCP client against Fathom's MCP server over both transports: stdio (the `fathom mcp`
command, spawned as a client spawns it) and streamable HTTP (`/mcp` on the live uvicorn server)."""

import sys
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from fathom.services import apikey_create
from tests.conftest import REPO_ROOT, worker_env
from tests.harness.quality.conftest import quality_on, roles  # noqa: F401  (the quality harness's scripted roles)

TRANSPORTS = ("stdio", "http")
# The clients of before the 2026-07-28 protocol: an initialize handshake and a session (Mcp-Session-Id), the
# progress on the session's stream, a cancellation sent as notifications/cancelled.
LEGACY_HTTP = "http-legacy"
TOOLS = {"search", "view_delta", "remember", "ask", "introspect", "draft_proposal", "list_pending_proposals",
         "iknowthat", "preview_recollection"}


def key_of(workspace, role: str = "operator") -> str:
    return apikey_create(workspace=workspace, role=role).secret


@pytest.fixture(params=TRANSPORTS)
def connect(request, transactional_db):
    """connect(workspace, key) -> an async context manager yielding an MCP Client acting with `key` in
    `workspace`, over this test's transport (a test may ask for LEGACY_HTTP too, with
    `@pytest.mark.parametrize("connect", [...], indirect=True)`)."""
    transport = request.param
    url = request.getfixturevalue("live_server_url") if transport != "stdio" else ""

    @asynccontextmanager
    async def client(workspace, key: str):
        if transport == "stdio":
            server = StdioServerParameters(command=sys.executable, cwd=REPO_ROOT,
                                           args=["manage.py", "fathom", "mcp", "--workspace", workspace.slug],
                                           env={**worker_env(), "FATHOM_API_KEY": key})
            async with Client(server) as connected:
                yield connected
        else:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
                mode = "legacy" if transport == LEGACY_HTTP else "auto"
                async with Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as connected:
                    yield connected

    client.transport = transport
    return client


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")
