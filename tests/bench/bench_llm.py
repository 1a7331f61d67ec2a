"""The model layer's own overhead per call, tracing included, with the scripted provider.

Calls run as production runs them: inside a tracing scope (a Celery task or an HTTP request) of
CALLS_PER_SCOPE calls, whose events are written in one INSERT when the scope ends; each call's
share of that flush is added to it. The scripted provider's own time (its Redis round trip, which a
real provider replaces with the network) is measured around the provider and subtracted, so the
figure is what `complete()` adds: role resolution, middleware, retry bookkeeping, pricing, spans.
The first figure is the layer alone (no model middleware); the second adds the middleware the
settings install (Festinger's recollections), for comparison.

    make bench   (or: .venv/bin/python -m pytest tests/bench/bench_llm.py -s -q -o python_files='bench_*.py')
"""

import statistics
import time

import pytest

from fathom.llm import Message, complete
from fathom.llm.budget import budget_spend
from fathom.llm.scripted import Script, ScriptedProvider
from fathom.tracing import scope, span

CALLS = 5_000
CALLS_PER_SCOPE = 10
TARGET_P50_MS = 1.0


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


def test_bench_model_call_overhead_with_tracing(transactional_db, workspace, provider_times, settings):
    settings.FATHOM_MODEL_MIDDLEWARE = []
    report("the model layer alone", measure(workspace, provider_times, CALLS), target=True)


def test_bench_with_the_configured_model_middleware(transactional_db, workspace, provider_times, settings):
    report(f"with the configured middleware {settings.FATHOM_MODEL_MIDDLEWARE}",
           measure(workspace, provider_times, CALLS // 5), target=False)


def test_bench_the_trace_budget_check(transactional_db, settings):
    """What the per-trace ceiling (fathom.llm.budget) adds to each call inside a trace: one EVAL in
    Redis. Already inside the figures above; here on its own."""
    settings.FATHOM_LLM_MAX_CALLS_PER_TRACE = 10**9
    for n in range(200):
        budget_spend(trace_id=f"bench-warm-{n % 10}", role="main")
    times = []
    for n in range(CALLS):
        started = time.perf_counter()
        budget_spend(trace_id=f"bench-{n // CALLS_PER_SCOPE}", role="main")
        times.append(time.perf_counter() - started)
    print()
    print(f"trace budget check (one Redis EVAL), {CALLS} calls: p50 {percentile(times, 0.5):.3f} ms   "
          f"p95 {percentile(times, 0.95):.3f} ms")


def measure(workspace, provider_times, calls: int) -> dict:
    script = Script.install(workspace, input_price_per_mtok=1, output_price_per_mtok=2)
    messages = [Message.system("Be brief."), Message.user("ping")]
    for _ in range(200 + calls):
        script.reply("ok", input_tokens=12, output_tokens=3)
    with scope():  # warm-up: imports, caches, connections
        for _ in range(200):
            complete(workspace=workspace, role="main", messages=messages)
    provider_times.clear()

    figures = {"overhead": [], "in_call": [], "flush": [], "whole": []}
    for _ in range(calls // CALLS_PER_SCOPE):
        durations = []
        scope_started = time.perf_counter()
        with scope():
            with span("trace.prompt", workspace=workspace, actor_id="bench"):
                for _ in range(CALLS_PER_SCOPE):
                    started = time.perf_counter()
                    complete(workspace=workspace, role="main", messages=messages)
                    durations.append(time.perf_counter() - started)
            flush_started = time.perf_counter()
        flush = time.perf_counter() - flush_started
        provider = provider_times[-CALLS_PER_SCOPE:]
        in_call = [call - spent for call, spent in zip(durations, provider, strict=True)]
        figures["in_call"] += in_call
        figures["overhead"] += [value + flush / CALLS_PER_SCOPE for value in in_call]
        figures["flush"].append(flush)
        figures["whole"].append((time.perf_counter() - scope_started) / CALLS_PER_SCOPE)
    figures["provider"] = list(provider_times)
    script.reset()
    return figures


def report(title: str, figures: dict, *, target: bool) -> None:
    def line(values):
        return f"p50 {percentile(values, 0.5):.3f} ms   p95 {percentile(values, 0.95):.3f} ms"

    overhead = figures["overhead"]
    verdict = ""
    if target:
        verdict = f"   (target p50 < {TARGET_P50_MS} ms: {'met' if percentile(overhead, 0.5) < TARGET_P50_MS else 'NOT met'})"
    print()
    print(f"model call overhead, {title}: {len(overhead)} calls, {CALLS_PER_SCOPE} per tracing scope")
    print(f"  overhead per call, its share of the flush included   {line(overhead)}   "
          f"mean {statistics.mean(overhead) * 1000:.3f} ms{verdict}")
    print(f"    of which inside complete()                          {line(figures['in_call'])}")
    print(f"    flush of one scope ({2 * CALLS_PER_SCOPE + 2} events, one INSERT)        {line(figures['flush'])}")
    print(f"  scripted provider itself (Redis, subtracted)         {line(figures['provider'])}")
    print(f"  whole call with provider and flush share             {line(figures['whole'])}")


def percentile(values, fraction) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000
