"""The conductor's own cost and its parallelism (figures printed, nothing asserted on time; the machine
is shared, so they are noisy).

    .venv/bin/python -m pytest tests/bench/bench_conductor.py -s -q -o python_files='bench_*.py'

1. Overhead per dispatch step: run_step in this process over a bootstrapped run with N ready items
   (N = 1 and 10): lock the run, settle the agenda, create a CapabilityCall per item, publish each
   task to the broker (real Redis) after commit. Also the step a finished call enqueues while others
   are still in flight (it finds nothing to do): the commonest step of a run.
2. Ten ready items at 1 s simulated latency: a real worker (a thread pool of 12: the queue's
   concurrency is what makes the items run at once; the `quality` thread-pool worker of issue 15 is
   not used here) carries ten terminal items, each `sleep 1`, dispatched by one step. Timed from the
   first dispatch to the last CapabilityCallFinished, and from POST to the run's end."""

import statistics
import subprocess
import sys
import time
import uuid

import pytest
from django.utils import timezone

from fathom.celery import app
from fathom.llm.scripted import Script
from harness.conductor.models import AgendaItem, CapabilityCall, Run
from harness.conductor.services import conductor_settings_get, run_create, run_step
from tests.conftest import REPO_ROOT, percentile, stop_worker, wait_for, wait_for_worker, worker_env

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = 40
ITEMS = 10


def bootstrapped_run(workspace, items: int) -> Run:
    run = Run.objects.create(workspace=workspace, objective="bench", capabilities=["researcher"],
                             bootstrapped_at=timezone.now(), status=Run.Status.RUNNING)
    AgendaItem.objects.bulk_create(AgendaItem(workspace=workspace, run=run, number=n, capability="researcher",
                                              input={"task": f"part {n}"}, source="bootstrap")
                                   for n in range(1, items + 1))
    return run


def test_conductor_overhead_per_dispatch_step(workspace):
    rows = []
    for items in (1, ITEMS):
        times = []
        for _ in range(STEPS):
            run = bootstrapped_run(workspace, items)
            started = time.perf_counter()
            run_step(run_id=run.pk)
            times.append((time.perf_counter() - started) * 1000)
            assert CapabilityCall.objects.filter(run=run).count() == items
        rows.append((f"dispatch step, {items} ready item(s)", times))
    idle = []
    run = bootstrapped_run(workspace, ITEMS)
    run_step(run_id=run.pk)
    for _ in range(STEPS):
        started = time.perf_counter()
        run_step(run_id=run.pk)  # all ten in flight: nothing to dispatch, no decision
        idle.append((time.perf_counter() - started) * 1000)
    rows.append(("step with everything in flight", idle))
    app.control.purge()

    print(f"\nconductor overhead per step ({STEPS} steps each; in this process, real PostgreSQL and Redis)")
    print(f"{'':40} {'p50 ms':>8} {'p90 ms':>8} {'mean ms':>8}")
    for name, times in rows:
        print(f"{name:40} {percentile(times, 50):8.2f} {percentile(times, 90):8.2f} {statistics.mean(times):8.2f}")
    print(f"per dispatched item (10 ready): p50 {percentile(rows[1][1], 50) / ITEMS:.2f} ms")


def test_ten_ready_items_at_one_second_each_run_in_parallel(workspace):
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.terminal_enabled = True
    limits.save()
    script = Script.install(workspace, roles=("conductor",))  # the terminal workers: the offline model
    script.call_tool("set_agenda", {"items": [{"capability": "terminal", "task": f"wait {n}", "command": "sleep 1"}
                                              for n in range(ITEMS)]})
    script.call_tool("complete", {"answer": "all waited"})
    name = f"bench-{uuid.uuid4().hex[:6]}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "fathom", "worker", "-Q", "fires", "-P", "threads", "-c", "12",
         "-n", f"{name}@%h", "--loglevel", "WARNING", "--without-mingle", "--without-gossip"],
        cwd=REPO_ROOT, env={**worker_env(), "FATHOM_DB_POOL_MAX_SIZE": "16"},  # a connection per thread
        stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_worker(name)
        started = time.perf_counter()
        run = run_create(workspace=workspace, objective="in the local shell, run `sleep 1` ten times at once")
        run = wait_for(lambda: Run.objects.filter(pk=run.pk, status__in=Run.TERMINAL).first(), timeout=120,
                       every=0.01)
        total = time.perf_counter() - started
    finally:
        stop_worker(worker)
        script.reset()
    calls = list(CapabilityCall.objects.filter(run=run))
    assert run.status == Run.Status.COMPLETED and len(calls) == ITEMS
    window = (max(c.finished_at for c in calls) - min(c.created_at for c in calls)).total_seconds()
    runs_of = [(c.finished_at - c.started_at).total_seconds() for c in calls]
    print(f"\n{ITEMS} ready items, each `sleep 1` (a 12-thread worker on the fires queue)")
    print(f"first dispatch -> last CapabilityCallFinished: {window:.2f} s (target <= 1.5 s; serial would be "
          f"{sum(runs_of):.1f} s)")
    print(f"POST -> run completed (bootstrap, dispatch, ten calls, one decision): {total:.2f} s")
    waits = [(c.started_at - c.created_at).total_seconds() for c in calls]
    print(f"each call, dispatched -> started: p50 {percentile(waits, 50):.2f} s, max {max(waits):.2f} s; "
          f"started -> finished: p50 {percentile(runs_of, 50):.2f} s, max {max(runs_of):.2f} s")
