"""The MCP server's search: the latency an MCP `search` call adds over the same search through REST, in
one run.

    .venv/bin/python -m pytest tests/bench/bench_mcp.py -s -q -o python_files='bench_*.py'

One uvicorn process serves both (the test suite's live server: `fathom.asgi`, as `fathom up` runs it),
over a lake of FATHOM_BENCH_MCP_DELTAS notes embedded with the tests' hashing embedder. Each round sends
one query through REST (`POST /v1/search`, a kept-alive HTTP client) and the same query through MCP
(the official client over streamable HTTP at `/mcp`, the same search arguments), taking turns so that
a shared machine's load falls on both alike; the figures are the p50 and p95 of each and of the
difference per round. The same queries then go through the stdio server (`fathom mcp`), for the
figure a spawned server gives (no HTTP on either side: not comparable with REST, printed for scale).
Prints figures; never asserts a timing."""

import os
import random
import statistics
import sys
import time

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from fathom.services import apikey_create
from lake.services import deltas_create, deltas_reembed
from tests.conftest import REPO_ROOT, percentile, worker_env

DELTAS = int(os.environ.get("FATHOM_BENCH_MCP_DELTAS", "2000"))
ROUNDS = int(os.environ.get("FATHOM_BENCH_MCP_ROUNDS", "200"))
WORDS = ("harbour tide foghorn pilot ferry lighthouse breakwater estuary freighter keeper mole festival "
         "survey kestrel quarry ridge storm burrow chick vole").split()

pytestmark = pytest.mark.slow


def test_mcp_search_latency_over_rest(live_server_url, transactional_db, workspace):
    rng = random.Random(7)
    notes = [{"content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))), "tags": ["kind:note"]}
             for _ in range(DELTAS)]
    for start in range(0, DELTAS, 1000):
        deltas_create(workspace=workspace, items=notes[start:start + 1000])
    deltas_reembed(workspace=workspace)
    key = apikey_create(workspace=workspace, role="viewer").secret
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(ROUNDS)]

    rest, mcp, stdio = anyio.run(_measure, live_server_url, key, workspace.slug, queries)

    added = [m - r for r, m in zip(rest, mcp, strict=True)]
    print(f"\nMCP search vs REST search, {ROUNDS} rounds over {DELTAS} deltas (ms; p50 / p95):")
    print(f"  REST  POST /v1/search      {_ms(rest)}")
    print(f"  MCP   search over /mcp     {_ms(mcp)}")
    print(f"  added by MCP, per round    {_ms(added)}   (p50 of the difference; "
          f"{statistics.median(mcp) / statistics.median(rest):.2f}x REST's p50)")
    print(f"  MCP   search over stdio    {_ms(stdio)}")


async def _measure(url: str, key: str, slug: str, queries: list[str]):
    rest, mcp, stdio = [], [], []
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=60) as http, \
            httpx2.AsyncClient(headers=headers, timeout=60) as mcp_http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=mcp_http)) as client:
        await client.call_tool("search", {"query": "warm up"})
        await http.post("/v1/search", json={"query": "warm up"})
        for query in queries:
            started = time.perf_counter()
            response = await http.post("/v1/search", json={"query": query})
            rest.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
            started = time.perf_counter()
            result = await client.call_tool("search", {"query": query})
            mcp.append((time.perf_counter() - started) * 1000)
            assert not result.is_error
            assert result.structured_content["rendered"] == response.json()["rendered"]
    server = StdioServerParameters(command=sys.executable, cwd=REPO_ROOT, args=["manage.py", "fathom", "mcp",
                                                                                "--workspace", slug],
                                   env={**worker_env(), "FATHOM_API_KEY": key})
    async with Client(server) as client:
        await client.call_tool("search", {"query": "warm up"})
        for query in queries:
            started = time.perf_counter()
            result = await client.call_tool("search", {"query": query})
            stdio.append((time.perf_counter() - started) * 1000)
            assert not result.is_error
    return rest, mcp, stdio


def _ms(values) -> str:
    return f"{percentile(values, 50):7.2f} / {percentile(values, 95):7.2f}"
