"""The file tools (seed 003): fs_list, fs_read, fs_write, fs_replace, each a background task.

A call checks its path by name, starts a Task and returns at once with the task's id; the result
comes back to the session as a TaskDone trigger, which the next turn reads. Paths are
managed://agent/<id>/<file> or managed://user/<id>/<file> (profile fields: AGENTS.md, SOUL.md,
IDENTITY.md, USER.md, memory, preferences) or fs://<path> (the workspace's own folder)."""

from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from harness.runtime.background import task_create
from harness.runtime.files import FileError, check_path
from harness.runtime.models import Task

PATH = {"type": "string", "maxLength": 2048,
        "description": "managed://agent/<id>/<AGENTS.md|SOUL.md|IDENTITY.md|memory>, "
                       "managed://user/<id>/<USER.md|memory|preferences>, or fs://<path in the workspace folder>"}


def background_call(ctx: ToolContext, tool: str, args: dict, *, timeout_seconds: int | None = None) -> str:
    """Start the task of this tool call (once per call: a replayed call finds it) and say so."""
    fire = ctx.fire
    if fire.session_id is None:
        raise ToolError("background tools need a session: their results come back to it as TaskDone")
    task = task_create(session=fire.session, tool=tool, arguments=args, fire=fire, call_id=ctx.call_id,
                       idempotency_key=ctx.idempotency_key, timeout_seconds=timeout_seconds)
    waiting = " (Pending: it starts when capacity frees)" if task.state == Task.State.PENDING else ""
    return (f"started task {task.pk}: {tool} {args.get('path') or ''}".rstrip() + f"{waiting}. Its result arrives "
            f"as a TaskDone trigger in a later turn; task_cancel stops it.")


def _file_tool(name: str):
    def run(ctx: ToolContext, args: dict):
        try:
            check_path(args["path"])
        except FileError as exc:
            raise ToolError(str(exc)) from None
        return background_call(ctx, name, args)
    return run


FS_LIST = register(Tool(
    name="fs_list", run=_file_tool("fs_list"),
    description="List a folder (background task): managed://, managed://agent, managed://agent/<id>, or fs://<folder>. "
                "Returns the task id at once; the entries arrive as TaskDone.",
    parameters={"type": "object", "required": ["path"], "additionalProperties": False,
                "properties": {"path": PATH}},
))

FS_READ = register(Tool(
    name="fs_read", run=_file_tool("fs_read"),
    description="Read a file (background task): a managed profile file or an fs:// file. Returns the task id at once; "
                "the text arrives as TaskDone.",
    parameters={"type": "object", "required": ["path"], "additionalProperties": False,
                "properties": {"path": PATH}},
))

FS_WRITE = register(Tool(
    name="fs_write", run=_file_tool("fs_write"),
    description="Write a file whole (background task, atomic). An existing non-empty file is replaced only with "
                "allow_override=true; a managed file keeps its previous version.",
    parameters={"type": "object", "required": ["path", "content"], "additionalProperties": False, "properties": {
        "path": PATH,
        "content": {"type": "string"},
        "allow_override": {"type": "boolean", "default": False, "description": "replace an existing file"},
    }},
))

FS_REPLACE = register(Tool(
    name="fs_replace", run=_file_tool("fs_replace"),
    description="Replace text in a file (background task): mode first (the first match), all, or one (exactly one "
                "match, else nothing changes and the error says how many matched).",
    parameters={"type": "object", "required": ["path", "old", "new"], "additionalProperties": False, "properties": {
        "path": PATH,
        "old": {"type": "string", "minLength": 1},
        "new": {"type": "string"},
        "mode": {"type": "string", "enum": ["first", "all", "one"], "default": "one"},
    }},
))
