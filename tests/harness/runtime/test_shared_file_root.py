"""A worker whose file root is not the deployment's shared one (a second host that kept its own
./var/fs) refuses file tasks with a clear error, sending them on for a worker that has the shared
root, instead of failing them one by one; the first use marks the shared root."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from fathom.file_root import MARK_FILE, FileRootMark, FileRootNotShared, file_root_verify
from harness.runtime import background, tasks
from harness.runtime.files import sandbox
from harness.runtime.models import Task

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """The (task id, countdown) of each task sent to a worker (the test runs them itself)."""
    messages = []
    monkeypatch.setattr(background, "_dispatch", lambda task, countdown=0: messages.append((task.pk, countdown)))
    return messages


@pytest.fixture
def shared(tmp_path, settings, workspace):
    """The shared file root, used once by the first host (so it is marked), with a note."""
    settings.FATHOM_FS_ROOT = tmp_path / "shared"
    (sandbox.workspace_root(workspace) / "todo.md").write_text("- buy milk\n")
    file_root_verify()
    return tmp_path / "shared"


def test_the_first_use_marks_the_root_and_the_database_alike(tmp_path, settings):
    settings.FATHOM_FS_ROOT = tmp_path / "root"
    mark = file_root_verify()
    assert (tmp_path / "root" / MARK_FILE).read_text().strip() == mark.token == FileRootMark.objects.get().token
    assert file_root_verify().token == mark.token  # and the same root passes again


def test_a_root_without_the_mark_is_not_the_shared_one_and_says_what_to_do(shared, tmp_path, settings):
    settings.FATHOM_FS_ROOT = tmp_path / "own"
    with pytest.raises(FileRootNotShared) as refused:
        file_root_verify()
    message = str(refused.value)
    assert f"this host's file root {tmp_path / 'own'} is not the deployment's shared one" in message
    assert f"the shared one was first used at {shared}" in message and "FATHOM_FS_ROOT" in message
    (tmp_path / "own").mkdir(exist_ok=True)
    (tmp_path / "own" / MARK_FILE).write_text("another deployment's token\n")
    with pytest.raises(FileRootNotShared, match="has another deployment's mark"):
        file_root_verify()


def test_a_worker_without_the_shared_root_refuses_a_file_task_and_sends_it_on(
        shared, tmp_path, settings, workspace, session, sent):
    # given a file task started on the shared deployment
    task = background.task_create(session=session, tool="fs_read", arguments={"path": "fs://todo.md"},
                                  idempotency_key=f"t:{uuid.uuid4().hex}")
    # when a worker whose file root is its own folder takes its message
    settings.FATHOM_FS_ROOT = tmp_path / "own"
    assert tasks.task_run.apply(args=[str(task.pk)]).get() == "refused"
    # then it ran nothing, counted no attempt, and sent the task on for another worker
    task.refresh_from_db()
    assert (task.state, task.attempts, task.error) == (Task.State.RUNNING, 0, "")
    assert sent[-1] == (task.pk, background.REFUSED_RESEND_SECONDS)
    assert not (tmp_path / "own").exists()  # nothing was even read there

    # and a worker that has the shared root runs it
    settings.FATHOM_FS_ROOT = shared
    assert tasks.task_run.apply(args=[str(task.pk)]).get() == "succeeded"
    task.refresh_from_db()
    assert task.result == "- buy milk\n"


def test_a_file_task_no_worker_with_the_shared_root_takes_fails_with_the_reason(
        shared, tmp_path, settings, session, sent):
    task = background.task_create(session=session, tool="fs_read", arguments={"path": "fs://todo.md"},
                                  idempotency_key=f"t:{uuid.uuid4().hex}")
    Task.objects.filter(pk=task.pk).update(started_at=timezone.now() - timedelta(seconds=task.timeout_seconds + 1))
    settings.FATHOM_FS_ROOT = tmp_path / "own"
    assert tasks.task_run.apply(args=[str(task.pk)]).get() == "failed"
    task.refresh_from_db()
    assert task.state == Task.State.FAILED and "is not the deployment's shared one" in task.error


def test_tasks_that_touch_no_file_run_anywhere(shared, tmp_path, settings, session, sent):
    task = background.task_create(session=session, tool="wait", arguments={"seconds": 0},
                                  idempotency_key=f"t:{uuid.uuid4().hex}")
    settings.FATHOM_FS_ROOT = tmp_path / "own"
    assert tasks.task_run.apply(args=[str(task.pk)]).get() == "succeeded"
