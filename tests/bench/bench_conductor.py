"""The conductor's own cost and its parallelism (figures printed, nothing asserted on time; the machine
is shared, so they are noisy).

    .venv/bin/python -m pytest tests/bench/bench_conductor.py -s -q -o python_files='bench_*.py'

1. Overhead per dispatch step: run_step in this process over a bootstrapped run with N ready items
   (N = 1 and 10): lock the run, settle the agenda, create a CapabilityCall per item, publish each
   task to the broker (real Redis) after commit. Also the step a finished call enqueues while others
   are still in flight (it finds nothing to do): the commonest step of a run.
2. Ten ready items at 1 s simulated latency, on the workers `fathom up` starts, as it starts them (the
   prefork worker runs the conductor's steps, the thread-pool quality worker its capability calls,
   FATHOM_QUALITY_WORKER_THREADS at once): ten terminal items, each `sleep 1`, dispatched by one step.
   Timed from the first dispatch to the last CapabilityCallFinished, and from the run's creation to its
   end."""

import shutil
import statistics
import time
import uuid

import pytest
from django.conf import settings
from django.utils import timezone

from fathom.celery import app
from fathom.llm.scripted import Script
from harness.conductor.models import AgendaItem, CapabilityCall, Run
from harness.conductor.services import conductor_settings_get, run_create, run_step
from tests.conftest import percentile, start_stack_workers, stop_worker, wait_for

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
    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap (bwrap), the terminal's sandbox: apt-get install bubblewrap")
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.terminal_enabled = True
    limits.save()
    script = Script.install(workspace, roles=("conductor",))  # the terminal workers: the offline model
    workers = start_stack_workers(f"bench-{uuid.uuid4().hex[:6]}")
    runs = []
    try:
        for _ in range(2):  # the first on workers just started (their pools open connections), then again
            script.call_tool("set_agenda", {"items": [
                {"capability": "terminal", "task": f"wait {n}", "command": "sleep 1"} for n in range(ITEMS)]})
            script.call_tool("complete", {"answer": "all waited"})
            started = time.perf_counter()
            run = run_create(workspace=workspace, objective="in the local shell, run `sleep 1` ten times at once")
            run = wait_for(lambda pk=run.pk: Run.objects.filter(pk=pk, status__in=Run.TERMINAL).first(),
                           timeout=120, every=0.01)
            runs.append((run, time.perf_counter() - started))
    finally:
        for worker in workers.values():
            stop_worker(worker)
        script.reset()

    print(f"\n{ITEMS} ready items, each `sleep 1`, on fathom up's workers (the calls on the quality worker's "
          f"{settings.FATHOM_QUALITY_WORKER_THREADS} threads)")
    for (run, total), which in zip(runs, ("first run (workers just started)", "second run"), strict=True):
        calls = list(CapabilityCall.objects.filter(run=run))
        assert run.status == Run.Status.COMPLETED and len(calls) == ITEMS
        window = (max(c.finished_at for c in calls) - min(c.created_at for c in calls)).total_seconds()
        runs_of = [(c.finished_at - c.started_at).total_seconds() for c in calls]
        waits = [(c.started_at - c.created_at).total_seconds() for c in calls]
        print(f"{which}: first dispatch -> last CapabilityCallFinished {window:.2f} s (target <= 1.5 s; serial "
              f"would be {sum(runs_of):.1f} s); run created -> completed (bootstrap, dispatch, ten calls, one "
              f"decision) {total:.2f} s")
        print(f"  each call, dispatched -> started: p50 {percentile(waits, 50):.2f} s, max {max(waits):.2f} s; "
              f"started -> finished: p50 {percentile(runs_of, 50):.2f} s, max {max(runs_of):.2f} s")
