"""What each background tool's task does on a worker: `RUNNERS[tool](task) -> result text`.

A runner raises FileError or TaskFailed for a failure the model should read, TaskCanceled when it
finds its task canceled (nothing of it lands after that: writes check just before they commit)."""

import json
import time

from harness.runtime import claims
from harness.runtime.files import file_list, file_read, file_replace, file_write
from harness.runtime.models import Task

WAIT_MAX_SECONDS = 3600


class TaskFailed(Exception):
    """The task's work failed in a way its result should say."""


class TaskCanceled(Exception):
    """The task was canceled while it ran."""


def run_fs_list(task: Task) -> str:
    return json.dumps(file_list(workspace=task.workspace, path=task.arguments["path"]), ensure_ascii=False)


def run_fs_read(task: Task) -> str:
    return file_read(workspace=task.workspace, path=task.arguments["path"])


def run_fs_write(task: Task) -> str:
    args = task.arguments
    still_running(task)
    return file_write(workspace=task.workspace, path=args["path"], content=args["content"],
                      allow_override=bool(args.get("allow_override", False)), replaced_by=f"task:{task.pk}",
                      before_commit=lambda: still_running(task))


def run_fs_replace(task: Task) -> str:
    args = task.arguments
    still_running(task)
    return file_replace(workspace=task.workspace, path=args["path"], old=args["old"], new=args["new"],
                        mode=args.get("mode", "one"), replaced_by=f"task:{task.pk}",
                        before_commit=lambda: still_running(task))


def run_wait(task: Task) -> str:
    """Wait `seconds`, proving the runner alive every second and stopping early when canceled."""
    seconds = float(task.arguments.get("seconds", 0))
    deadline = time.monotonic() + min(seconds, WAIT_MAX_SECONDS)
    while (remaining := deadline - time.monotonic()) > 0:
        time.sleep(min(1.0, remaining))
        still_running(task)
        claims.heartbeat(Task, task.pk)
    note = task.arguments.get("note", "")
    return f"waited {seconds:g} s" + (f": {note}" if note else "")


def still_running(task: Task) -> None:
    """TaskCanceled unless the task is still Running (called before anything of it lands)."""
    if not Task.objects.filter(pk=task.pk, state=Task.State.RUNNING).exists():
        raise TaskCanceled(str(task.pk))


RUNNERS = {"fs_list": run_fs_list, "fs_read": run_fs_read, "fs_write": run_fs_write, "fs_replace": run_fs_replace,
           "wait": run_wait}
