"""The harness's own cost, with an instant scripted model (figures printed, nothing asserted on time).

    make bench
    .venv/bin/python -m pytest tests/bench/bench_harness.py -s -q -o python_files='bench_*.py'

1. Overhead per turn: fires of TURNS tool turns (a no-op tool) run in this process; the time from
   one committed turn to the next is a whole turn of the loop: render the prompt, the model call
   (the scripted model: a Redis round trip), commit the FireTurn, trace spans, run the tool, commit
   its result and the AgentStream event, heartbeats. The scripted call alone is measured too. Then
   where the time goes: one more fire with its statements counted (per turn, by table) and the
   loop's parts timed (each part's own time, without the parts it calls).
2. Fires per second with one and with two worker processes (real Celery workers, concurrency 1
   each): FIRES sessions in their own workspaces (each its own script, so answers never cross),
   one message each, timed from the first send until every fire is finished."""

import statistics
import time
import uuid
from collections import Counter, defaultdict

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import fathom.llm
from fathom.llm import Message, complete, middleware
from fathom.llm.scripted import Script
from fathom.models import Workspace
from fathom.tracing.spans import Buffer
from harness.fires import loop
from harness.fires.models import Fire, FireTurn
from harness.fires.services import fire_create, fire_run
from harness.fires.tools.base import REGISTRY, Tool, register
from harness.runtime.services import harness_settings_get, message_send, session_create
from tests.conftest import percentile, start_worker, stop_worker, wait_for_worker

pytestmark = pytest.mark.django_db(transaction=True)

TURNS = 20
OVERHEAD_FIRES = 6
FIRES = 24


@pytest.fixture
def noop_tool():
    register(Tool(name="noop", description="does nothing", run=lambda ctx, args: "ok",
                  parameters={"type": "object", "properties": {"step": {"type": "integer"}}}))
    yield
    REGISTRY.pop("noop", None)


def test_harness_overhead_per_turn(workspace, scripted_llm, noop_tool):
    limits = harness_settings_get(workspace_id=workspace.pk)
    limits.max_turns_per_fire = TURNS + 5
    limits.save()

    # the scripted model alone: what a turn spends that is not the harness
    for _ in range(50):
        scripted_llm.reply("x")
    calls = []
    for n in range(50):  # a question each: the loop detector answers a conversation repeating itself
        started = time.perf_counter()
        complete(workspace=workspace, role="main", messages=[Message.user(f"q {n}")])
        calls.append((time.perf_counter() - started) * 1000)

    turns, fires = [], []
    for n in range(OVERHEAD_FIRES):  # a question each: the loop detector cuts a conversation answering alike
        fire = fire_create(workspace=workspace, mode="introspective", question=f"bench {n}")
        for step in range(TURNS):  # a step each: the loop detector cuts a tool called alike three times
            scripted_llm.call_tool("noop", {"step": step})
        scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "done"}}]).call_tool("skip")
        started = time.perf_counter()
        fire = fire_run(fire_id=fire.pk)
        fires.append((time.perf_counter() - started) * 1000)
        assert fire.status == "finished" and fire.model_calls == TURNS + 2
        stamps = list(FireTurn.objects.filter(fire=fire, phase="main").order_by("number")
                      .values_list("created_at", flat=True))
        turns += [(b - a).total_seconds() * 1000 for a, b in zip(stamps, stamps[1:], strict=False)]
    turns = turns[TURNS - 1:]  # the first fire warms caches and connections up

    model_p50 = statistics.median(calls)
    print(f"\n[harness] per turn, {len(turns)} turns ({TURNS}-turn fires, no-op tool, instant scripted model):"
          f" p50 {percentile(turns, 50):.1f} ms, p95 {percentile(turns, 95):.1f} ms"
          f" (the scripted model call alone: p50 {model_p50:.1f} ms, p95 {percentile(calls, 95):.1f} ms;"
          f" harness own p50 ~{percentile(turns, 50) - model_p50:.1f} ms)")
    print(f"[harness] whole fire of {TURNS + 2} model calls incl. writes and review: "
          f"p50 {statistics.median(fires[1:]):.0f} ms")
    _where_the_time_goes(workspace, scripted_llm)


# The loop's parts, timed by wrapping them (module, attribute, label); a part's own time excludes the
# wrapped parts it calls, so the figures add up to the turn.
PARTS = [
    (loop, "_model_turn", "journal: commit the model turn (+ AgentStream, heartbeats)"),
    (loop, "_record", "journal: commit a tool result (+ AgentStream, heartbeats)"),
    (loop, "_check_cancel", "cancel check"),
    (loop, "render_messages", "prompt rendering"),
    (loop, "_run_call", "tool call: span, argument validation, the no-op tool"),
    (loop, "_run_in_transaction", "journal: a writing tool's transaction (BEGIN, COMMIT)"),
    (fathom.llm, "complete", "model call: request, scripted provider (Redis)"),
    (loop, "complete", "model call: request, scripted provider (Redis)"),
    (middleware, "run_before", "model middleware (Festinger) before"),
    (middleware, "run_after", "model middleware (Festinger) after"),
    (Buffer, "flush", "trace flush"),
]


def _where_the_time_goes(workspace, scripted_llm):
    own, stack = defaultdict(float), []

    def timed(function, label):
        def wrapper(*args, **kwargs):
            stack.append(0.0)
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                inner = stack.pop()
                own[label] += elapsed - inner
                if stack:
                    stack[-1] += elapsed
        return wrapper

    fire = fire_create(workspace=workspace, mode="introspective", question="bench")
    for step in range(TURNS):
        scripted_llm.call_tool("noop", {"step": step})
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "done"}}]).call_tool("skip")
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in PARTS if hasattr(owner, name)]
    try:
        for owner, name, label in PARTS:
            if hasattr(owner, name):
                setattr(owner, name, timed(getattr(owner, name), label))
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            fire_run(fire_id=fire.pk)
            total = time.perf_counter() - started
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
    turns = TURNS + 1  # the main loop's model turns (the review pass is one more)
    tables = Counter(_table(q["sql"]) for q in queries.captured_queries)
    print(f"[harness] one {TURNS + 2}-call fire, {total * 1000:.0f} ms: {len(queries)} SQL statements "
          f"(~{len(queries) / turns:.1f} per turn; BEGIN, COMMIT and savepoints included), by table per turn: "
          + ", ".join(f"{table} {count / turns:.1f}" for table, count in tables.most_common()))
    for label, seconds in sorted(own.items(), key=lambda item: -item[1]):
        print(f"[harness]   {seconds * 1000 / turns:5.2f} ms/turn  {label}")
    rest = total - sum(own.values())
    print(f"[harness]   {rest * 1000 / turns:5.2f} ms/turn  the rest (loop, fire start and end, writes, review)")


def _table(sql: str) -> str:
    words = sql.replace('"', " ").split()
    for keyword in ("INTO", "UPDATE", "FROM"):
        if keyword in words and words.index(keyword) + 1 < len(words):
            return words[words.index(keyword) + 1]
    return words[0] if words else "?"


def test_fires_per_second_with_one_and_two_workers(django_db_blocker):
    rates = {}
    for count in (1, 2):
        sessions = []
        for _ in range(FIRES):
            workspace = Workspace.objects.create(slug=f"bench-{uuid.uuid4().hex[:8]}", name="bench")
            script = Script.install(workspace, roles=("main",))
            script.reply(tool_calls=[{"name": "respond", "arguments": {"body": "done"}}]).call_tool("skip")
            sessions.append(session_create(workspace=workspace))
        names = [f"bench-{uuid.uuid4().hex[:6]}" for _ in range(count)]
        workers = [start_worker(name) for name in names]
        try:
            for name in names:
                wait_for_worker(name, timeout=60)
            started = time.perf_counter()
            for session in sessions:
                message_send(session=session, content="bench")
            deadline = time.monotonic() + 300
            while Fire.objects.filter(session__in=sessions, status="finished").count() < FIRES:
                assert time.monotonic() < deadline, "the fires did not finish"
                time.sleep(0.02)
            elapsed = time.perf_counter() - started
        finally:
            for worker in workers:
                stop_worker(worker)
        rates[count] = FIRES / elapsed
        print(f"\n[harness] {FIRES} fires (session tick + fire + writes + review) on {count} worker process(es): "
              f"{elapsed:.2f} s, {rates[count]:.1f} fires/s")
    print(f"[harness] two workers / one: x{rates[2] / rates[1]:.2f}")
