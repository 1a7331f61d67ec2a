"""Token streaming, end to end (figures printed, nothing asserted on time).

    .venv/bin/python -m pytest tests/bench/bench_streaming.py -s -q -o python_files='bench_*.py'

The time from the model's first token to the terminal client's first AgentStream event: a real
worker runs each turn, the scripted model streams its answer in chunks (CHUNK_CHARS characters every
CHUNK_DELAY seconds) and records when its first chunk left (wall clock); the client (harness.runtime.session_client,
the SSE code `fathom client` runs) follows the session's events from uvicorn and records when the
first delta of each answer arrived. Both clocks are this machine's. RUNS messages, one at a time."""

import statistics
import threading
import time

import pytest

from fathom.llm.scripted import Script
from fathom.services import apikey_create
from harness.runtime.models import HarnessSettings
from harness.runtime.services import harness_settings_get, session_create
from harness.runtime.session_client import FathomClient
from tests.conftest import percentile, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

RUNS = 20
TEXT = "The tide turns at noon and the harbour empties by two, so the boats wait for the evening light. " * 2
CHUNK_CHARS = 6
CHUNK_DELAY = 0.02


def test_first_model_token_to_the_clients_first_agent_stream_event(celery_worker, live_server_url, workspace):
    script = Script.install(workspace, roles=("main",))
    harness_settings_get(workspace_id=workspace.pk)
    batch_ms = HarnessSettings.objects.get(workspace=workspace).stream_batch_ms
    session = session_create(workspace=workspace, title="bench")
    client = FathomClient(live_server_url, apikey_create(workspace=workspace, role="operator").secret)
    first_deltas, deltas_per_answer, stop = [], [], threading.Event()

    def follow():
        for event in client.events(str(session.pk), after=0, stop=stop):
            data = event["data"]
            if event["kind"] == "AgentStream" and "delta" in data and data["phase"] == "main":
                if data["part"] == 0:
                    first_deltas.append(time.time())
                    deltas_per_answer.append(0)
                deltas_per_answer[-1] += 1

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    started = time.perf_counter()
    for run in range(RUNS):
        script.reply(TEXT, chunk_chars=CHUNK_CHARS, chunk_delay=CHUNK_DELAY).call_tool("skip", {"reason": "-"})
        client.message_send(str(session.pk), f"question {run}")
        wait_for(lambda n=run + 1: session.fires.filter(status="finished").count() == n, timeout=120)
    elapsed = time.perf_counter() - started
    wait_for(lambda: len(first_deltas) == RUNS, timeout=30)
    stop.set()
    client.close()

    firsts = script.first_chunks
    assert len(firsts) == RUNS
    latencies = [(seen - sent) * 1000 for seen, sent in zip(first_deltas, firsts, strict=True)]
    chunks = -(-len(TEXT) // CHUNK_CHARS)
    print(f"\n--- first model token -> the client's first AgentStream event ({RUNS} answers, "
          f"{chunks} chunks of {CHUNK_CHARS} chars every {CHUNK_DELAY * 1000:.0f} ms, batch {batch_ms} ms)")
    print(f"p50 {percentile(latencies, 50):.1f} ms   p90 {percentile(latencies, 90):.1f} ms   "
          f"min {min(latencies):.1f} ms   max {max(latencies):.1f} ms   mean {statistics.mean(latencies):.1f} ms")
    print(f"AgentStream delta events per answer: median {statistics.median(deltas_per_answer):g} "
          f"(of {chunks} chunks); {RUNS} turns in {elapsed:.1f} s")
