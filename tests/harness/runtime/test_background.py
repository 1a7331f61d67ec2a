"""Background tasks as services (the worker's part called in-process; test_background_worker.py runs a
real worker): every transition and its TaskStateChanged event, capacity per workspace and session,
TaskDone re-entering the session and read by the next turn, cancel, timeout, a dead worker, REST."""

import functools
import uuid
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.utils import timezone

from fathom.tenancy import Workspace
from harness.fires.models import Fire
from harness.runtime import background, claims, runners
from harness.runtime.files import sandbox
from harness.runtime.models import Session, SessionEvent, Task, TaskSlots, Trigger
from harness.runtime.services import harness_settings_get, message_send, session_create
from tests.conftest import run_at_once
from tests.harness.support import session_tick
from tests.harness.tool_fire import run_tools

pytestmark = pytest.mark.django_db
State = Task.State


@pytest.fixture
def dispatched(monkeypatch):
    """The ids of the tasks sent to a worker (the test runs them itself, with background.task_execute)."""
    sent = []
    monkeypatch.setattr(background, "_dispatch", lambda task, **_options: sent.append(task.pk))
    return sent


@pytest.fixture
def home(tmp_path, settings, workspace):
    settings.FATHOM_FS_ROOT = tmp_path / "root"
    root = sandbox.workspace_root(workspace)
    (root / "notes").mkdir()
    (root / "notes" / "todo.md").write_text("- buy milk\n")
    return root


def limits(workspace, **values):
    row = harness_settings_get(workspace_id=workspace.pk)
    for name, value in values.items():
        setattr(row, name, value)
    row.save()
    return row


def create(session, tool="fs_read", path="fs://notes/todo.md", **args):
    return background.task_create(session=session, tool=tool, arguments={"path": path, **args},
                                  idempotency_key=f"test:{uuid.uuid4().hex}")


def task_events(session):
    return [(e.data["task_id"], e.data["previous"], e.data["state"])
            for e in SessionEvent.objects.filter(session=session, kind="TaskStateChanged").order_by("seq")]


def running(session=None, workspace=None):
    tasks = Task.objects.filter(state=State.RUNNING)
    return tasks.filter(session=session).count() if session else tasks.filter(workspace=workspace).count()


# --- transitions and their events ------------------------------------------------------------------------

def test_a_task_runs_pending_running_succeeded_with_an_event_for_each_and_re_enters_as_task_done(
        session, home, dispatched):
    task = create(session)
    assert task.state == State.RUNNING and dispatched == [task.pk]
    assert background.task_execute(task_id=task.pk) == State.SUCCEEDED
    task.refresh_from_db()
    assert (task.state, task.result, task.attempts, task.runner) == (State.SUCCEEDED, "- buy milk\n", 1, "")
    tid = str(task.pk)
    assert task_events(session) == [(tid, None, "pending"), (tid, "pending", "running"), (tid, "running", "succeeded")]
    done = Trigger.objects.get(session=session, kind=Trigger.Kind.TASK_DONE)
    assert done.state == Trigger.State.QUEUED and done.source == "task"
    assert done.content == f"task {tid} fs_read(fs://notes/todo.md) Succeeded:\n- buy milk\n"
    assert done.payload["task_id"] == tid and done.payload["state"] == "succeeded"


def test_a_failing_task_is_failed_with_the_error_in_its_event_and_its_task_done(session, home, dispatched):
    task = create(session, path="fs://notes/missing.md")
    background.task_execute(task_id=task.pk)
    task.refresh_from_db()
    assert (task.state, task.error) == (State.FAILED, "fs://notes/missing.md does not exist")
    last = SessionEvent.objects.filter(session=session, kind="TaskStateChanged").last()
    assert (last.data["state"], last.data["error"]) == ("failed", task.error)
    assert Trigger.objects.get(kind=Trigger.Kind.TASK_DONE).content.endswith("Failed:\nfs://notes/missing.md does not exist")


def test_the_same_tool_call_replayed_makes_no_second_task(session, home, dispatched):
    first = background.task_create(session=session, tool="fs_list", arguments={"path": "fs://"}, idempotency_key="k")
    again = background.task_create(session=session, tool="fs_list", arguments={"path": "fs://"}, idempotency_key="k")
    assert first.pk == again.pk and Task.objects.count() == 1 and dispatched == [first.pk]


def test_a_second_run_of_a_task_that_ended_does_nothing(session, home, dispatched):
    task = create(session)
    background.task_execute(task_id=task.pk)
    assert background.task_execute(task_id=task.pk) == "skipped"
    assert Task.objects.get(pk=task.pk).attempts == 1


# --- capacity ----------------------------------------------------------------------------------------------

def test_capacity_n_run_the_rest_wait_and_start_as_others_end(workspace, home, dispatched):
    limits(workspace, task_capacity_workspace=3, task_capacity_session=2)
    a, b = session_create(workspace=workspace), session_create(workspace=workspace)
    a_tasks = [create(a) for _ in range(3)]
    b_tasks = [create(b) for _ in range(2)]
    states = lambda tasks: [Task.objects.get(pk=t.pk).state for t in tasks]  # noqa: E731
    assert states(a_tasks) == ["running", "running", "pending"]  # the session's 2
    assert states(b_tasks) == ["running", "pending"]  # the workspace's 3
    assert len(dispatched) == 3

    # when one of A's ends, the oldest waiting task that fits starts: A's third
    background.task_execute(task_id=a_tasks[0].pk)
    assert states(a_tasks) == ["succeeded", "running", "running"] and states(b_tasks) == ["running", "pending"]
    # when one of B's ends, B's second starts
    background.task_execute(task_id=b_tasks[0].pk)
    assert states(b_tasks) == ["succeeded", "running"]
    for task in (*a_tasks[1:], b_tasks[1]):
        background.task_execute(task_id=task.pk)
    assert states(a_tasks + b_tasks) == ["succeeded"] * 5
    assert set(TaskSlots.objects.values_list("running", flat=True)) == {0}
    assert len(dispatched) == 5  # each sent once
    pending_events = [e for e in task_events(a) + task_events(b) if e[2] == "running"]
    assert len(pending_events) == 5


def test_capacity_is_read_from_the_workspace_settings_at_each_start(workspace, home, dispatched):
    limits(workspace, task_capacity_workspace=1, task_capacity_session=1)
    session = session_create(workspace=workspace)
    first, second = create(session), create(session)
    assert Task.objects.get(pk=second.pk).state == State.PENDING
    limits(workspace, task_capacity_workspace=2, task_capacity_session=2)
    assert background.tasks_start_pending(workspace_id=workspace.pk) == 1
    assert Task.objects.get(pk=second.pk).state == State.RUNNING and first.state == State.RUNNING


@pytest.mark.django_db(transaction=True)
def test_concurrent_starters_never_start_more_than_the_capacity(workspace, home, monkeypatch):
    # given 12 waiting tasks and a capacity of 3, and 8 threads starting waiting tasks at once (what
    # finishing tasks do), each on its own connection
    monkeypatch.setattr(background, "_dispatch", lambda task, **_options: None)
    limits(workspace, task_capacity_workspace=3, task_capacity_session=3)
    session = session_create(workspace=workspace)
    limits(workspace, task_capacity_workspace=0)
    tasks = [create(session) for _ in range(12)]
    assert all(t.state == State.PENDING for t in tasks)
    limits(workspace, task_capacity_workspace=3)
    assert not run_at_once([lambda: background.tasks_start_pending(workspace_id=workspace.pk)] * 8)
    assert Task.objects.filter(state=State.RUNNING).count() == 3
    assert TaskSlots.objects.get(scope=f"workspace:{workspace.pk}").running == 3
    assert TaskSlots.objects.get(scope=f"session:{session.pk}").running == 3


# --- TaskDone re-enters the session, and the next turn reads it -----------------------------------------------

def test_task_done_is_consumed_by_the_next_turn_which_reads_the_result(session, home, dispatched, scripted_llm):
    task = create(session)
    background.task_execute(task_id=task.pk)
    scripted_llm.call_tool("respond", {"body": "you need milk"})
    scripted_llm.call_tool("skip")
    assert session_tick(session_id=session.pk) == "ended"
    done = Trigger.objects.get(kind=Trigger.Kind.TASK_DONE)
    assert done.state == Trigger.State.CONSUMED and done.turn is not None
    fire = Fire.objects.get(turn=done.turn)
    assert fire.work_set["messages"][0]["source"] == "task_done"
    sent = [m.content for m in scripted_llm.sent[0].messages if m.role == "user"]
    # a machine trigger's notice: a harness note, asked by no one
    assert sent[-1] == f"[harness] [TaskDone] task {task.pk} fs_read(fs://notes/todo.md) Succeeded:\n- buy milk"


def test_a_turn_with_a_message_and_a_task_done_sees_both_the_message_last(session, home, dispatched, scripted_llm):
    background.task_execute(task_id=create(session).pk)
    message_send(session=session, content="what is on my list?")
    scripted_llm.call_tool("respond", {"body": "milk"})
    scripted_llm.call_tool("skip")
    session_tick(session_id=session.pk)
    sent = [m.content for m in scripted_llm.sent[0].messages if m.role == "user"]
    assert sent[-2].startswith("[harness] [TaskDone]") and sent[-1] == "what is on my list?"


def test_the_offline_agent_lists_and_reads_files_then_relays_the_results(session, home, dispatched):
    # given the offline model (no model configured) and a message naming two file operations
    message_send(session=session, content="list fs://notes and read fs://notes/todo.md")
    # when the session ticks: one fire calls fs_list and fs_read (a task each) and responds
    session_tick(session_id=session.pk)
    first = Fire.objects.get(session=session)
    assert first.status == "finished", first.error
    assert first.model_calls == 4  # fs_list, fs_read, respond, and the review pass
    tasks = list(Task.objects.filter(session=session).order_by("created_at"))
    assert [(t.tool, t.arguments["path"], t.state) for t in tasks] == [
        ("fs_list", "fs://notes", "running"), ("fs_read", "fs://notes/todo.md", "running")]
    assert f"started task {tasks[0].pk}" in first.response["body"]
    # and when the tasks end, their TaskDone triggers make the next turn, which relays the results
    for task in tasks:
        background.task_execute(task_id=task.pk)
    session_tick(session_id=session.pk)
    second = Fire.objects.filter(session=session).order_by("-created_at").first()
    assert second.pk != first.pk and second.status == "finished"
    assert second.model_calls == 2  # respond, and the review pass
    assert "todo.md" in second.response["body"] and "- buy milk" in second.response["body"]
    assert not Trigger.objects.filter(session=session, state=Trigger.State.QUEUED).exists()
    kinds = [e.kind for e in SessionEvent.objects.filter(session=session).order_by("seq")]
    assert kinds.count("TaskStateChanged") == 6


def test_a_background_tool_outside_a_session_says_it_needs_one(workspace, scripted_llm):
    _, results = run_tools(scripted_llm, workspace, [("r", "fs_read", {"path": "fs://a"})])
    assert results["r"] == "error: background tools need a session: their results come back to it as TaskDone"


def test_a_bad_path_is_refused_by_the_tool_at_once_without_a_task(session, scripted_llm):
    claims.claim(Session, session.pk, stale_after=300)  # a session's fire runs under the session's claim
    _, results = run_tools(scripted_llm, session.workspace, [("r", "fs_read", {"path": "fs://../x"})],
                           session=session, mode="reactive")
    assert results["r"].startswith("error: 'fs://../x' leaves the workspace folder")
    assert not Task.objects.exists()


# --- cancel ------------------------------------------------------------------------------------------------

def test_cancel_a_pending_task(workspace, home, dispatched):
    limits(workspace, task_capacity_workspace=1)
    session = session_create(workspace=workspace)
    create(session)
    waiting = create(session)
    canceled = background.task_cancel(task=waiting, by="me")
    assert (canceled.state, canceled.cancel_requested_by) == (State.CANCELED, "me")
    assert task_events(session)[-1] == (str(waiting.pk), "pending", "canceled")
    assert Trigger.objects.filter(kind=Trigger.Kind.TASK_DONE, payload__state="canceled").count() == 1
    assert background.task_execute(task_id=waiting.pk) == "skipped"


def test_cancel_a_running_task_frees_its_slot_starts_the_next_and_discards_its_result(workspace, home, dispatched):
    limits(workspace, task_capacity_workspace=1)
    session = session_create(workspace=workspace)
    first, second = create(session), create(session)
    background.task_cancel(task=first)
    assert Task.objects.get(pk=second.pk).state == State.RUNNING
    assert task_events(session)[-2:] == [(str(first.pk), "running", "canceled"), (str(second.pk), "pending", "running")]
    assert background.task_execute(task_id=first.pk) == "skipped"
    assert Task.objects.get(pk=first.pk).result == ""


def test_a_write_canceled_while_it_runs_does_not_land(session, home, dispatched, monkeypatch):
    task = create(session, tool="fs_write", path="fs://notes/todo.md", content="gone", allow_override=True)
    real = runners.still_running
    calls = []

    def cancel_on_second_check(t):
        calls.append(1)
        if len(calls) == 2:  # just before the rename
            background.task_cancel(task=Task.objects.get(pk=t.pk))
        real(t)

    monkeypatch.setattr(runners, "still_running", cancel_on_second_check)
    assert background.task_execute(task_id=task.pk) == "canceled"
    assert (home / "notes" / "todo.md").read_text() == "- buy milk\n"
    assert Task.objects.get(pk=task.pk).state == State.CANCELED


def test_cancel_of_an_ended_task_changes_nothing(session, home, dispatched):
    task = create(session)
    background.task_execute(task_id=task.pk)
    assert background.task_cancel(task=Task.objects.get(pk=task.pk)).state == State.SUCCEEDED


def test_the_task_cancel_tool_cancels_a_task_of_the_fires_session_only(session, workspace, home, dispatched,
                                                                       scripted_llm):
    limits(workspace, task_capacity_workspace=1)
    create(session)
    waiting = create(session)
    elsewhere = create(session_create(workspace=workspace))
    claims.claim(Session, session.pk, stale_after=300)
    _, results = run_tools(scripted_llm, workspace, [("c", "task_cancel", {"task_id": str(waiting.pk)}),
                                                     ("d", "task_cancel", {"task_id": str(elsewhere.pk)})],
                           session=session, mode="reactive")
    assert results["c"] == f"task {waiting.pk} is Canceled"
    assert results["d"] == f"error: no task {elsewhere.pk} in this session"
    assert Task.objects.get(pk=elsewhere.pk).state == State.PENDING


# --- timeout and dead workers ---------------------------------------------------------------------------------

def test_a_task_past_its_soft_time_limit_fails_timed_out(session, home, dispatched, monkeypatch):
    def slow(task):
        raise SoftTimeLimitExceeded()

    monkeypatch.setitem(runners.RUNNERS, "fs_read", slow)
    monkeypatch.setitem(background.RUNNERS, "fs_read", slow)
    task = create(session)
    background.task_execute(task_id=task.pk)
    task.refresh_from_db()
    assert (task.state, task.error) == (State.FAILED, f"timed out after {task.timeout_seconds} s")


def test_the_sweep_fails_a_running_task_past_its_time_limit(session, home, dispatched):
    task = create(session)
    Task.objects.filter(pk=task.pk).update(picked_at=timezone.now() - timedelta(seconds=task.timeout_seconds + 31),
                                           runner=claims.runner_id(), runner_heartbeat_at=timezone.now())
    assert background.tasks_sweep()["timed_out"] == [task.pk]
    task.refresh_from_db()
    assert (task.state, task.error) == (State.FAILED, f"timed out after {task.timeout_seconds} s")
    assert TaskSlots.objects.get(scope=f"session:{session.pk}").running == 0


def test_a_task_whose_worker_died_is_sent_again_and_retried_then_failed_after_its_attempts(
        session, home, dispatched):
    # given a task whose runner is a process of this host that no longer exists
    task = create(session)
    dead = f"{claims.runner_id().split(':')[0]}:999999999:1"
    Task.objects.filter(pk=task.pk).update(runner=dead, runner_heartbeat_at=timezone.now(), attempts=1,
                                           picked_at=timezone.now())
    # the sweep sends it again, and the new run takes it over as attempt 2
    assert background.tasks_sweep()["resent"] == [task.pk]
    assert dispatched == [task.pk, task.pk]
    assert background.task_execute(task_id=task.pk) == State.SUCCEEDED
    assert Task.objects.get(pk=task.pk).attempts == 2
    # a task that already used its attempts fails instead of running again
    other = create(session)
    Task.objects.filter(pk=other.pk).update(runner=dead, runner_heartbeat_at=timezone.now(), attempts=2)
    assert background.task_execute(task_id=other.pk) == State.FAILED
    other.refresh_from_db()
    assert (other.state, other.error) == (State.FAILED, "ran 2 time(s) without finishing: its worker died")


def test_a_live_runner_is_left_alone_by_the_sweep(session, home, dispatched):
    task = create(session)
    Task.objects.filter(pk=task.pk).update(runner=claims.runner_id(), runner_heartbeat_at=timezone.now(),
                                           picked_at=timezone.now())
    assert background.tasks_sweep() == {"timed_out": [], "resent": [], "started": 0}


# --- REST and isolation ----------------------------------------------------------------------------------------

def test_rest_lists_reads_and_cancels_tasks(session, workspace, home, dispatched, api):
    limits(workspace, task_capacity_workspace=1)
    first, second = create(session), create(session)
    listed = api.get(f"/v1/sessions/{session.pk}/tasks").json()["results"]
    assert [(t["id"], t["state"]) for t in listed] == [(str(second.pk), "pending"), (str(first.pk), "running")]
    assert [t["id"] for t in api.get(f"/v1/sessions/{session.pk}/tasks?state=pending").json()["results"]] == [
        str(second.pk)]
    assert api.get(f"/v1/sessions/{session.pk}/tasks?state=lost").status_code == 400
    body = api.get(f"/v1/tasks/{first.pk}").json()
    assert (body["tool"], body["arguments"], body["state"]) == ("fs_read", {"path": "fs://notes/todo.md"}, "running")
    canceled = api.post(f"/v1/tasks/{second.pk}/cancel")
    assert canceled.status_code == 200 and canceled.json()["state"] == "canceled"
    assert canceled.json()["cancel_requested_by"].startswith("operator:apikey:")
    assert api.post("/v1/tasks/not-a-uuid/cancel").status_code == 404


def test_tasks_are_invisible_across_workspaces(session, home, dispatched, other_workspace, api_client_for):
    task = create(session)
    theirs = api_client_for(other_workspace)
    assert theirs.get(f"/v1/tasks/{task.pk}").status_code == 404
    assert theirs.post(f"/v1/tasks/{task.pk}/cancel").status_code == 404
    assert theirs.get(f"/v1/sessions/{session.pk}/tasks").status_code == 404
    assert Task.objects.get(pk=task.pk).state == State.RUNNING


def test_rest_profile_history(workspace, api, api_client_for, other_workspace):
    api.post("/v1/profiles/agents", {"slug": "scout", "memory": "one"}, format="json")
    api.patch("/v1/profiles/agents/scout", {"memory": "two"}, format="json")
    api.patch("/v1/profiles/agents/scout", {"soul_md": "bold"}, format="json")
    history = api.get("/v1/profiles/agents/scout/history").json()["results"]
    assert [(h["field"], h["version"], h["content"], h["replaced_by"]) for h in history] == [
        ("soul_md", 2, "", "api"), ("memory", 1, "one", "api")]
    assert [h["field"] for h in api.get("/v1/profiles/agents/scout/history?field=memory").json()["results"]] == [
        "memory"]
    assert api.get("/v1/profiles/agents/scout/history?field=user_md").status_code == 400
    assert api.get("/v1/profiles/agents/fathom/history").json()["results"] == []
    assert api_client_for(other_workspace).get("/v1/profiles/agents/scout/history").status_code == 404
    assert api.get("/v1/profiles/users/nobody/history").status_code == 404


def test_a_workspaces_capacity_is_its_own(workspace, other_workspace, home, dispatched):
    limits(workspace, task_capacity_workspace=1)
    mine = session_create(workspace=workspace)
    create(mine)
    assert create(mine).state == State.PENDING
    theirs = session_create(workspace=Workspace.objects.get(pk=other_workspace.pk))
    assert create(theirs).state == State.RUNNING


@pytest.mark.django_db(transaction=True)
def test_finishing_canceling_and_creating_at_once_neither_deadlocks_nor_miscounts(workspace, home, monkeypatch):
    # given two sessions with running and waiting tasks, and threads that at once finish, cancel and
    # create tasks (each on its own connection)
    monkeypatch.setattr(background, "_dispatch", lambda task, **_options: None)
    limits(workspace, task_capacity_workspace=3, task_capacity_session=2)
    sessions = [session_create(workspace=workspace) for _ in range(2)]
    tasks = [create(sessions[i % 2]) for i in range(10)]

    def act(index):
        if index < 4:
            background.task_execute(task_id=tasks[index].pk)
        elif index < 8:
            background.task_cancel(task=Task.objects.get(pk=tasks[index].pk))
        else:
            create(sessions[index % 2])

    errors = run_at_once([functools.partial(act, index) for index in range(10)])
    assert not errors, errors
    # then the counters say exactly what runs, within the capacities
    running_by_session = {s.pk: Task.objects.filter(session=s, state=State.RUNNING).count() for s in sessions}
    assert sum(running_by_session.values()) == TaskSlots.objects.get(scope=f"workspace:{workspace.pk}").running <= 3
    for session in sessions:
        assert TaskSlots.objects.get(scope=f"session:{session.pk}").running == running_by_session[session.pk] <= 2
