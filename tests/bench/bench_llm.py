"""The model layer's own overhead per call, tracing included, with the scripted provider.

Calls run as production runs them: inside a tracing scope (a Celery task or an HTTP request) of
CALLS_PER_SCOPE calls, whose events are written in one INSERT when the scope ends; each call's
share of that flush is added to it. The scripted provider's own time (its Redis round trip, which a
real provider replaces with the network) is measured around the provider and subtracted, so the
figure is what `complete()` adds: role resolution, middleware, retries bookkeeping, pricing, spans.

    make bench   (or: .venv/bin/python -m pytest tests/bench/bench_llm.py -s -q -o python_files='bench_*.py')
"""

import statistics
import time

import pytest

from fathom.llm import Message, complete
from fathom.llm.scripted import Script, ScriptedProvider
from fathom.tracing import scope, span

CALLS = 5_000
CALLS_PER_SCOPE = 10
TARGET_P50_MS = 1.0


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def ms(seconds):
    return seconds * 1000


@pytest.fixture
def provider_times(monkeypatch):
    times = []
    original = ScriptedProvider.complete

    def timed(self, request, *, timeout=None):
        started = time.perf_counter()
        try:
            return original(self, request, timeout=timeout)
        finally:
            times.append(time.perf_counter() - started)

    monkeypatch.setattr(ScriptedProvider, "complete", timed)
    return times


def queue(script, count):
    for _ in range(count):
        script.reply("ok", input_tokens=12, output_tokens=3)


def test_bench_model_call_overhead_with_tracing(transactional_db, workspace, provider_times):
    script = Script.install(workspace, input_price_per_mtok=1, output_price_per_mtok=2)
    messages = [Message.system("Be brief."), Message.user("ping")]
    queue(script, 200)
    with scope():  # warm-up: imports, caches, connections
        for _ in range(200):
            complete(workspace=workspace, role="main", messages=messages)
    provider_times.clear()
    queue(script, CALLS)

    totals, overheads, in_call, flushes = [], [], [], []
    for _ in range(CALLS // CALLS_PER_SCOPE):
        calls = []
        scope_started = time.perf_counter()
        with scope():
            with span("trace.prompt", workspace=workspace, actor_id="bench"):
                for _ in range(CALLS_PER_SCOPE):
                    started = time.perf_counter()
                    complete(workspace=workspace, role="main", messages=messages)
                    calls.append(time.perf_counter() - started)
            flush_started = time.perf_counter()
        flush = time.perf_counter() - flush_started
        flushes.append(flush)
        share = flush / CALLS_PER_SCOPE
        scope_total = time.perf_counter() - scope_started
        provider = provider_times[-CALLS_PER_SCOPE:]
        in_call += [call - spent for call, spent in zip(calls, provider, strict=True)]
        overheads += [call - spent + share for call, spent in zip(calls, provider, strict=True)]
        totals.append(scope_total / CALLS_PER_SCOPE)
    script.reset()

    p50, p95 = percentile(overheads, 0.50), percentile(overheads, 0.95)
    print()
    print(f"model layer overhead per call, tracing and its flush included ({CALLS} calls, "
          f"{CALLS_PER_SCOPE} per scope):")
    print(f"  overhead      p50 {ms(p50):.3f} ms   p95 {ms(p95):.3f} ms   mean {ms(statistics.mean(overheads)):.3f} ms"
          f"   (target p50 < {TARGET_P50_MS} ms: {'met' if ms(p50) < TARGET_P50_MS else 'NOT met'})")
    print(f"  scripted provider itself (Redis round trip, subtracted)   p50 "
          f"{ms(percentile(provider_times, 0.5)):.3f} ms   p95 {ms(percentile(provider_times, 0.95)):.3f} ms")
    print(f"  of which inside complete()   p50 {ms(percentile(in_call, 0.5)):.3f} ms   "
          f"p95 {ms(percentile(in_call, 0.95)):.3f} ms")
    print(f"  and the flush of a scope ({2 * CALLS_PER_SCOPE + 2} events, one INSERT)   p50 "
          f"{ms(percentile(flushes, 0.5)):.3f} ms   p95 {ms(percentile(flushes, 0.95)):.3f} ms")
    print(f"  whole call incl. provider and flush share   p50 {ms(percentile(totals, 0.5)):.3f} ms   "
          f"p95 {ms(percentile(totals, 0.95)):.3f} ms")
