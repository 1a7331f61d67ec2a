"""Festinger's proxy: the latency it adds in front of an Ollama, against LiteLLM's proxy in front of the
same upstream, in one run.

    .venv/bin/python -m pytest tests/bench/bench_proxy.py -s -q -o python_files='bench_*.py'

Four processes besides this one: a fast fake Ollama (tests/bench/fake_ollama_app.py, uvicorn), the
proxy (`festinger.proxy.asgi`, as `fathom up` runs it, on the test database, with a world whose
recollection is injected into every prompt and the loop guard on), the Celery worker `fathom up` runs
(it does the work after each proxied response: counting, the loop guard, the trace), and LiteLLM's
proxy (`litellm --model ollama_chat/...`). Sequential requests, whole and streamed: p50 / p99 of the
latency added over calling the fake directly (streamed: to the first byte and to the last; a proxy's
requests take turns with direct ones, so that a shared machine's load falls on both alike), then 64
concurrent streams: requests per second and errors; last, how many proxied calls the worker finished.
Prints figures and the issue's targets; never asserts a timing (the machine is shared: numbers are
noisy)."""

import asyncio
import math
import os
import secrets
import shutil
import statistics
import sys
import time

import aiohttp
import httpx
import psutil
import pytest

from festinger.models import Concept
from festinger.services import insert_fact, world_ensure
from tests.bench.proxy_stack import chat_body, finished_calls, pct, proxy_stack, start, stop
from tests.fathom.stack import free_port

SEQUENTIAL = int(os.environ.get("FATHOM_BENCH_PROXY_REQUESTS", "300"))
WARM_UP = 20
CONCURRENT_STREAMS = 64
REQUESTS_PER_STREAM = int(os.environ.get("FATHOM_BENCH_PROXY_PER_STREAM", "10"))


@pytest.fixture
def stack(transactional_db, workspace):
    world_ensure(workspace=workspace)
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    Concept.objects.filter(workspace=workspace, token="gnommoweb").update(encounter_count=20,
                                                                          saliency=math.log(20))
    with proxy_stack(workspace) as started:
        litellm_port, litellm_key = free_port(), f"sk-bench-{secrets.token_hex(16)}"
        litellm = shutil.which("litellm", path=os.path.dirname(sys.executable)) if os.environ.get(
            "FATHOM_BENCH_PROXY_LITELLM", "1") != "0" else None
        litellm_process = None
        if litellm is not None:
            try:
                litellm_process = start(
                    [litellm, "--model", "ollama_chat/llama3.2", "--api_base", started.fake, "--host", "127.0.0.1",
                     "--port", str(litellm_port), "--telemetry", "False", "--num_workers", "1"],
                    port=litellm_port, health="/health/liveliness",
                    env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": litellm_key,
                         "LITELLM_LOG": "ERROR"})
            except RuntimeError as exc:
                print(f"LiteLLM's proxy did not start ({exc}): compared with nothing")
                litellm = None
        try:
            yield {"fake": started.fake, "proxy": started.proxy, "workspace": workspace,
                   "proxy_process": psutil.Process(started.proxy_process.pid),
                   "worker_process": psutil.Process(started.worker_process.pid),
                   "litellm": f"http://127.0.0.1:{litellm_port}" if litellm else None, "litellm_key": litellm_key}
        finally:
            if litellm_process is not None:
                stop(litellm_process)


def openai_body(stream: bool) -> dict:
    return {"model": "llama3.2", "stream": stream, "messages": chat_body(stream)["messages"]}


def timed(client: httpx.Client, url: str, body: dict, headers: dict, *, stream: bool) -> tuple[float, float]:
    """(seconds to the first byte, seconds to the last) of one request."""
    started = time.perf_counter()
    first = None
    with client.stream("POST", url, json=body, headers=headers) as answer:
        for _ in answer.iter_raw():
            if first is None:
                first = time.perf_counter() - started
        assert answer.status_code == 200, answer.read()
    return first or 0.0, time.perf_counter() - started


def sequential(targets: dict, *, stream: bool) -> dict:
    """One request at a time to every target in turn (each round in another order), so that all see the
    same load of the shared machine: label -> {"first": [...], "total": [...]} seconds. `targets`:
    label -> (url, body, headers, sessions)."""
    rows = {label: {"first": [], "total": []} for label in targets}
    labels = list(targets)
    with httpx.Client(timeout=30) as client:
        for index in range(SEQUENTIAL + WARM_UP):
            turn = index % len(labels)
            for label in labels[turn:] + labels[:turn]:
                url, body, headers, sessions = targets[label]
                sent = dict(headers or {})
                if sessions:  # every request its own conversation: the same answer again is no loop
                    sent["X-Festinger-Session"] = f"bench-{index}-{secrets.token_hex(3)}"
                first, total = timed(client, url, body, sent, stream=stream)
                if index >= WARM_UP:
                    rows[label]["first"].append(first)
                    rows[label]["total"].append(total)
    return rows


def added(over: dict, base: dict, key: str) -> tuple[float, float]:
    return pct(over[key], 0.5) - pct(base[key], 0.5), pct(over[key], 0.99) - pct(base[key], 0.99)


async def concurrent(url: str, body_of, headers=None, sessions: bool = False) -> tuple[float, int, int]:
    """64 streams at once, each REQUESTS_PER_STREAM requests in a row: (requests/s, done, errors). The
    client is aiohttp: httpx's pool, at 64 connections, tops out below what the fake Ollama alone serves."""
    done, errors = 0, 0

    async def one_stream(session, index):
        nonlocal done, errors
        for n in range(REQUESTS_PER_STREAM):
            sent = dict(headers or {})
            if sessions:
                sent["X-Festinger-Session"] = f"c-{index}-{n}-{secrets.token_hex(3)}"
            try:
                async with session.post(url, json=body_of(True), headers=sent) as answer:
                    async for _ in answer.content.iter_any():
                        pass
                    if answer.status == 200:
                        done += 1
                    else:
                        errors += 1
            except (TimeoutError, aiohttp.ClientError):
                errors += 1

    connector = aiohttp.TCPConnector(limit=CONCURRENT_STREAMS * 2)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        started = time.perf_counter()
        await asyncio.gather(*(one_stream(session, index) for index in range(CONCURRENT_STREAMS)))
        elapsed = time.perf_counter() - started
    return done / elapsed, done, errors


def cpu_seconds(process: psutil.Process) -> float:
    """User and system CPU time of a process and its children (a prefork worker's pool)."""
    times = process.cpu_times()
    return times.user + times.system + times.children_user + times.children_system + sum(
        child.cpu_times().user + child.cpu_times().system for child in process.children(recursive=True))


def test_proxy_latency_and_throughput_against_litellm(stack):
    fake, proxy, litellm = stack["fake"], stack["proxy"], stack["litellm"]
    litellm_headers = {"Authorization": f"Bearer {stack['litellm_key']}"}

    forwarded = httpx.post(f"{proxy}/api/chat", json=chat_body(False), timeout=30)
    assert forwarded.status_code == 200, forwarded.text
    seen = httpx.get(f"{fake}/last").json()["messages"][0]["content"]
    finished_calls(stack["workspace"], 1)  # the worker warmed up by the first call's work
    cpu_before = {name: cpu_seconds(stack[name]) for name in ("proxy_process", "worker_process")}
    print(f"\nrecollection injected into the forwarded prompt: {seen.startswith('<recollection>')} "
          f"({seen.splitlines()[1] if seen.startswith('<recollection>') else seen[:60]!r})")
    print(f"{SEQUENTIAL} sequential requests per row (after {WARM_UP} warm-up), taking turns with the direct "
          f"ones beside them; {os.cpu_count()} cores shared: noisy")

    rows = {}
    for stream in (False, True):
        kind = "stream" if stream else "whole"
        direct = (f"{fake}/api/chat", chat_body(stream), None, False)
        rows.update({(label, kind): row for label, row in sequential({
            "direct": direct, "fathom": (f"{proxy}/api/chat", chat_body(stream), None, True),
            "fathom-openai": (f"{proxy}/v1/chat/completions", openai_body(stream), None, True)}, stream=stream).items()})
        if litellm:  # apart: what LiteLLM does after a response would land on the requests after it
            rows.update({(label, kind): row for label, row in sequential({
                "direct beside litellm": direct,
                "litellm": (f"{litellm}/v1/chat/completions", openai_body(stream), litellm_headers, False)},
                stream=stream).items()})

    print(f"{'':40} {'p50 ms':>9} {'p99 ms':>9} {'added p50':>10} {'added p99':>10}")
    for (who, kind), row in rows.items():
        base = rows[("direct beside litellm" if who.endswith("litellm") else "direct", kind)]
        for key in (("first", "total") if kind == "stream" else ("total",)):
            a50, a99 = added(row, base, key)
            label = f"{who} {kind}" + (" first byte" if key == "first" else "")
            print(f"{label:40} {pct(row[key], 0.5):9.2f} {pct(row[key], 0.99):9.2f} {a50:10.2f} {a99:10.2f}")
    for kind, key, label in (("whole", "total", "whole"), ("stream", "first", "streamed, first byte")):
        ours = added(rows[("fathom", kind)], rows[("direct", kind)], key)
        print(f"target: fathom {label} added p50 <= 1.5 ms, p99 <= 5 ms: {ours[0]:.2f} / {ours[1]:.2f} ms")
        if litellm:
            theirs = added(rows[("litellm", kind)], rows[("direct beside litellm", kind)], key)
            print(f"target: fathom's {label} added p50 <= 0.1x LiteLLM's: {ours[0]:.2f} vs {theirs[0]:.2f} ms "
                  f"({ours[0] / theirs[0] if theirs[0] > 0 else float('nan'):.3f}x)")

    ours_rps, ours_done, ours_errors = asyncio.run(concurrent(f"{proxy}/api/chat", chat_body, sessions=True))
    print(f"{CONCURRENT_STREAMS} concurrent streams x {REQUESTS_PER_STREAM}: fathom {ours_rps:.0f} req/s "
          f"({ours_done} done, {ours_errors} errors)")
    direct_rps, _, _ = asyncio.run(concurrent(f"{fake}/api/chat", chat_body))
    print(f"{CONCURRENT_STREAMS} concurrent streams x {REQUESTS_PER_STREAM}: the fake alone {direct_rps:.0f} req/s")
    if litellm:
        their_rps, their_done, their_errors = asyncio.run(concurrent(f"{litellm}/v1/chat/completions", openai_body,
                                                                     headers=litellm_headers))
        print(f"{CONCURRENT_STREAMS} concurrent streams x {REQUESTS_PER_STREAM}: litellm {their_rps:.0f} req/s "
              f"({their_done} done, {their_errors} errors); target fathom >= 10x: "
              f"{ours_rps / their_rps if their_rps else float('nan'):.1f}x")
    assert ours_errors == 0
    proxied = 1 + sum(SEQUENTIAL + WARM_UP for who, _kind in rows if who.startswith("fathom")) + ours_done
    finished, waited = finished_calls(stack["workspace"], proxied)
    print(f"the worker finished the work after {finished} of {proxied} proxied calls ({waited:.1f} s after the last)")
    spent = {name: cpu_seconds(stack[name]) - seconds for name, seconds in cpu_before.items()}
    print(f"CPU per proxied call: the proxy {spent['proxy_process'] / (proxied - 1) * 1000:.2f} ms, "
          f"the worker {spent['worker_process'] / (proxied - 1) * 1000:.2f} ms")
    print("medians of totals (ms): " + ", ".join(
        f"{who}/{kind}={statistics.median(row['total']) * 1000:.2f}" for (who, kind), row in rows.items()))
