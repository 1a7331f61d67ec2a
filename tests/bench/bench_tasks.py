"""Background task dispatch overhead with an idle worker (figures printed, nothing asserted on time).

    .venv/bin/python -m pytest tests/bench/bench_tasks.py -s -q -o python_files='bench_*.py'

TASKS fs_read tasks, one at a time (each ends before the next is made, so the worker is idle), on
one real Celery worker (concurrency 1). From the task's creation, timed by the rows' own timestamps:
- Running: the capacity claim, in the creating transaction (the state the API and events show);
- picked: the worker has begun the run (the message went through Redis to the worker's pool process,
  which claimed the row);
- Succeeded: the file was read, the result committed with its event and TaskDone trigger."""

import statistics
import uuid

import pytest

from harness.runtime import background
from harness.runtime.files import sandbox
from harness.runtime.models import Task, Trigger, Turn
from harness.runtime.services import session_create
from tests.conftest import percentile, start_worker, stop_worker, wait_for, wait_for_worker

pytestmark = pytest.mark.django_db(transaction=True)

TASKS = 40


def test_task_dispatch_overhead(workspace, tmp_path, settings):
    settings.FATHOM_FS_ROOT = tmp_path / "root"
    (sandbox.workspace_root(workspace) / "note.md").write_text("hello\n")
    name = f"bench-{uuid.uuid4().hex[:6]}"
    worker = start_worker(name, env={"FATHOM_FS_ROOT": str(tmp_path / "root")})
    try:
        wait_for_worker(name)
        session = session_create(workspace=workspace)
        rows = []
        for index in range(TASKS + 3):
            task = background.task_create(session=session, tool="fs_read", arguments={"path": "fs://note.md"},
                                          idempotency_key=f"bench:{uuid.uuid4().hex}")
            wait_for(lambda task=task: Task.objects.filter(pk=task.pk, state="succeeded").exists(), timeout=60,
                     every=0.005)
            # its TaskDone makes a turn (an offline fire) on the same worker: let it end, so the worker is idle
            wait_for(lambda: not Trigger.objects.filter(session=session).exclude(state="consumed").exists()
                     and not Turn.objects.filter(session=session, status="running").exists(), timeout=60)
            if index >= 3:  # the first ones warm the worker's pool process up
                rows.append(Task.objects.get(pk=task.pk))
    finally:
        stop_worker(worker)

    def ms(start, end):
        return [(getattr(t, end) - getattr(t, start)).total_seconds() * 1000 for t in rows]

    print(f"\nbackground task dispatch, {TASKS} fs_read tasks one at a time, an idle worker (concurrency 1); "
          "the machine is shared, so timings are noisy")
    print(f"{'from creation to':<34}{'p50 ms':>10}{'p90 ms':>10}{'mean ms':>10}")
    for label, values in (("Running (capacity claimed)", ms("created_at", "started_at")),
                          ("picked by the worker", ms("created_at", "picked_at")),
                          ("Succeeded (result committed)", ms("created_at", "finished_at"))):
        print(f"{label:<34}{percentile(values, 50):>10.1f}{percentile(values, 90):>10.1f}"
              f"{statistics.mean(values):>10.1f}")
