"""The loop guard in front of a benchmark client (issue 30): the same one-shot request sent 3,000 times
is no loop. Before, a conversation without X-Festinger-Session was named by its system prompt and first
user message, so such a benchmark was answered almost entirely by the circuit breaker.

    .venv/bin/python -m pytest tests/bench/bench_loops.py -s -q -o python_files='bench_*.py'

Three processes besides this one, tests/bench/proxy_stack.py's (as bench_proxy.py has them): a fast
fake Ollama, the proxy (`festinger.proxy.asgi`, the loop guard on, its default thresholds) and the
worker that records after each response. REQUESTS identical requests one at a time, taking turns with as many sent to the
fake directly (p50 / p99 of the latency the proxy adds, and requests/s), then REQUESTS more from
CONCURRENCY clients at once (requests/s). Asserts that nothing tripped: every answer is the model's,
no loop event was recorded, no conversation has a loop state. Prints the figures, asserts no timing."""

import asyncio
import os
import time

import aiohttp
import httpx
import pytest

from fathom.redis_client import get_redis
from festinger.loops.models import LoopEvent
from festinger.services import world_ensure
from tests.bench.proxy_stack import chat_body, finished_calls, pct, proxy_stack

REQUESTS = int(os.environ.get("FATHOM_BENCH_LOOPS_REQUESTS", "3000"))
CONCURRENCY = 32


@pytest.fixture
def stack(transactional_db, workspace):
    world_ensure(workspace=workspace)
    with proxy_stack(workspace) as started:
        yield {"fake": started.fake, "proxy": started.proxy, "workspace": workspace}


def sequential(fake: str, proxy: str) -> tuple[dict, list[str], float]:
    """REQUESTS identical requests to the proxy, each beside one to the fake: ({"direct"|"fathom": seconds
    per request}, the proxy's done_reasons, seconds spent in the proxy's requests)."""
    body, seconds, reasons = chat_body(False), {"direct": [], "fathom": []}, []
    with httpx.Client(timeout=30) as client:
        for index in range(REQUESTS):
            for label in (("direct", "fathom") if index % 2 else ("fathom", "direct")):
                started = time.perf_counter()
                answer = client.post(f"{fake if label == 'direct' else proxy}/api/chat", json=body)
                seconds[label].append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text
                if label == "fathom":
                    reasons.append(answer.json()["done_reason"])
    return seconds, reasons, sum(seconds["fathom"])


async def concurrent(proxy: str) -> tuple[float, list[str]]:
    """REQUESTS identical requests from CONCURRENCY clients at once: (requests/s, the done_reasons)."""
    body, reasons = chat_body(False), []

    async def client(session, count):
        for _ in range(count):
            async with session.post(f"{proxy}/api/chat", json=body) as answer:
                reasons.append((await answer.json(content_type=None)).get("done_reason"))

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        started = time.perf_counter()
        shares = [REQUESTS // CONCURRENCY + (1 if index < REQUESTS % CONCURRENCY else 0) for index in range(CONCURRENCY)]
        await asyncio.gather(*(client(session, share) for share in shares))
        return REQUESTS / (time.perf_counter() - started), reasons


def test_identical_one_shot_requests_trip_nothing(stack):
    fake, proxy, workspace = stack["fake"], stack["proxy"], stack["workspace"]
    for _ in range(20):  # warm-up: the caches, the connections
        httpx.post(f"{proxy}/api/chat", json=chat_body(False), timeout=30)

    seconds, reasons, spent = sequential(fake, proxy)
    rps, concurrent_reasons = asyncio.run(concurrent(proxy))
    sent = 20 + 2 * REQUESTS
    finished, waited = finished_calls(workspace, sent)

    added50 = pct(seconds["fathom"], 0.5) - pct(seconds["direct"], 0.5)
    added99 = pct(seconds["fathom"], 0.99) - pct(seconds["direct"], 0.99)
    print(f"\n{REQUESTS} identical one-shot requests, one at a time (beside as many sent directly): "
          f"{REQUESTS / spent:.0f} requests/s; latency added p50 {added50:.2f} ms, p99 {added99:.2f} ms "
          f"(direct p50 {pct(seconds['direct'], 0.5):.2f} ms)")
    print(f"{REQUESTS} more from {CONCURRENCY} clients at once: {rps:.0f} requests/s")
    tripped = LoopEvent.objects.filter(workspace=workspace).count()
    states = sum(1 for _ in get_redis().scan_iter(f"festinger:loop:{workspace.pk}:*"))
    answered = {reason: (reasons + concurrent_reasons).count(reason) for reason in set(reasons + concurrent_reasons)}
    print(f"answers by done_reason: {answered}; loop events recorded: {tripped}; conversations with a loop "
          f"state: {states}; the worker finished {finished} of {sent} calls ({waited:.1f} s after the last)")
    assert answered == {"stop": 2 * REQUESTS}
    assert tripped == 0 and states == 0
