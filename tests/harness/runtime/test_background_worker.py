"""Background tasks on a real worker: the offline agent lists and reads files through tasks and the
event stream shows TaskStateChanged and the TaskDone trigger; `kill -9` of the process running a
task never leaves it Running; a task past its time limit fails, timed out."""

import os
import signal
import uuid

import pytest

from harness.fires.models import Fire
from harness.runtime import background
from harness.runtime.files import sandbox
from harness.runtime.models import SessionEvent, Task, Trigger
from harness.runtime.services import harness_settings_get, session_create
from tests.conftest import wait_for
from tests.harness.conftest import ALL_QUEUES

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fs_env(tmp_path, settings):
    """A FATHOM_FS_ROOT of the test's own, here and (as environment) for the test's worker."""
    settings.FATHOM_FS_ROOT = tmp_path / "root"
    return {"FATHOM_FS_ROOT": str(tmp_path / "root")}


def test_the_offline_agent_lists_and_reads_a_file_through_tasks_seen_on_the_event_stream(
        workspace, api, fs_env, workers):
    # given a workspace folder with a note, and a worker (the offline model answers: no key)
    root = sandbox.workspace_root(workspace)
    (root / "notes").mkdir()
    (root / "notes" / "todo.md").write_text("- buy milk\n")
    workers(ALL_QUEUES, env=fs_env)
    session = api.post("/v1/sessions", {}, format="json").json()["id"]

    # when the user asks for a listing and a read
    api.post(f"/v1/sessions/{session}/messages", {"content": "list fs://notes and read fs://notes/todo.md"},
             format="json")

    # then two tasks run and end, and their TaskDone triggers are consumed by a later turn that relays them
    wait_for(lambda: Task.objects.filter(session_id=session, state="succeeded").count() == 2, timeout=90)
    wait_for(lambda: Trigger.objects.filter(session_id=session, kind="task_done").count() == 2
             and not Trigger.objects.filter(session_id=session, kind="task_done").exclude(state="consumed").exists()
             and Fire.objects.filter(session_id=session, status="finished").count() >= 2
             and not Fire.objects.filter(session_id=session).exclude(status="finished").exists(), timeout=90)
    events = api.get(f"/v1/sessions/{session}/events?limit=1000").json()["events"]
    changes = [(e["data"]["tool"], e["data"]["state"]) for e in events if e["kind"] == "TaskStateChanged"]
    assert sorted(changes) == sorted([("fs_list", "pending"), ("fs_list", "running"), ("fs_list", "succeeded"),
                                      ("fs_read", "pending"), ("fs_read", "running"), ("fs_read", "succeeded")])
    accepted = [e["data"] for e in events if e["kind"] == "TriggerAccepted" and e["data"]["variant"] == "TaskDone"]
    assert len(accepted) == 2 and any("- buy milk" in a["content"] for a in accepted)
    bodies = [f.response.get("body", "") for f in Fire.objects.filter(session_id=session)]
    assert any("- buy milk" in body for body in bodies), bodies


@pytest.mark.parametrize("max_attempts, outcome", [(2, "succeeded"), (1, "failed")])
def test_kill_9_of_the_process_running_a_task_never_leaves_it_running(
        workspace, workers, max_attempts, outcome):
    # given a worker running a 3-second timer task
    limits = harness_settings_get(workspace_id=workspace.pk)
    limits.task_max_attempts = max_attempts
    limits.save()
    first = workers(ALL_QUEUES)
    session = session_create(workspace=workspace)
    task = background.task_create(session=session, tool="wait", arguments={"seconds": 3},
                                  idempotency_key=f"kill:{uuid.uuid4().hex}", timeout_seconds=60)
    runner = wait_for(lambda: Task.objects.get(pk=task.pk).runner, timeout=60)
    pid = int(runner.split(":")[1])
    assert os.getpgid(pid) == first.pid and pid != first.pid  # a pool process of our worker runs it

    # when that process is killed with SIGKILL (the worker's main process requeues the message)
    os.kill(pid, signal.SIGKILL)

    # then the redelivered run takes the task over as a second attempt, or fails it past its attempts
    wait_for(lambda: Task.objects.get(pk=task.pk).state in Task.TERMINAL, timeout=90)
    task.refresh_from_db()
    assert task.state == outcome, (task.error, task.attempts)
    if outcome == "failed":
        assert task.error == "ran 1 time(s) without finishing: its worker died"
    else:
        assert task.attempts == 2 and task.result == "waited 3 s"
    assert SessionEvent.objects.filter(session=session, kind="TaskStateChanged",
                                       data__state=outcome).count() == 1


def test_a_task_past_its_time_limit_fails_timed_out_on_the_worker(workspace, workers):
    workers(ALL_QUEUES)
    session = session_create(workspace=workspace)
    task = background.task_create(session=session, tool="wait", arguments={"seconds": 60},
                                  idempotency_key=f"slow:{uuid.uuid4().hex}", timeout_seconds=2)
    wait_for(lambda: Task.objects.get(pk=task.pk).state in Task.TERMINAL, timeout=60)
    task.refresh_from_db()
    assert (task.state, task.error) == ("failed", "timed out after 2 s")
