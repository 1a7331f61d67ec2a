"""Tools about background tasks: task_cancel stops one of the session's tasks; wait is a background
task that ends after a while (a timer the agent sets for itself: its TaskDone wakes the session)."""

from fathom.selectors import uuid_or_none
from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from harness.fires.tools.fs import background_call
from harness.runtime.background import TIME_LIMIT_GRACE_SECONDS, task_cancel
from harness.runtime.models import Task
from harness.runtime.runners import WAIT_MAX_SECONDS


def run_cancel(ctx: ToolContext, args: dict):
    fire = ctx.fire
    task = Task.objects.filter(pk=uuid_or_none(str(args["task_id"]).strip()), session_id=fire.session_id).first() \
        if fire.session_id else None
    if task is None:
        raise ToolError(f"no task {args['task_id']} in this session")
    task = task_cancel(task=task, by=f"fire:{fire.pk}")
    return f"task {task.pk} is {task.get_state_display()}"


def run_wait(ctx: ToolContext, args: dict):
    return background_call(ctx, "wait", args, timeout_seconds=int(args["seconds"]) + TIME_LIMIT_GRACE_SECONDS)


TASK_CANCEL = register(Tool(
    name="task_cancel", run=run_cancel,
    description="Cancel one of this session's background tasks (Pending or Running) by its id.",
    parameters={"type": "object", "required": ["task_id"], "additionalProperties": False,
                "properties": {"task_id": {"type": "string", "description": "the id fs_* or wait returned"}}},
))

WAIT = register(Tool(
    name="wait", run=run_wait,
    description="A timer (background task): ends after `seconds`, and its TaskDone, carrying `note`, wakes this "
                "session then.",
    parameters={"type": "object", "required": ["seconds"], "additionalProperties": False, "properties": {
        "seconds": {"type": "integer", "minimum": 1, "maximum": WAIT_MAX_SECONDS},
        "note": {"type": "string", "maxLength": 2000, "description": "what to do when it ends"},
    }},
))
