"""dispatch_helper(host, task, title): propose a task for a helper (e.g. claude-code) on a configured
host, as a `helper-dispatch` proposal; the operator approves before anything executes."""

from harness.fires.tools.base import Tool, ToolContext, register
from harness.fires.tools.proposing import draft


def run(ctx: ToolContext, args: dict):
    return draft(ctx, tool="helper-dispatch", title=args["title"], rationale=args.get("rationale", ""),
                 payload={"host": args["host"], "task": args["task"]})


TOOL = register(Tool(
    name="dispatch_helper",
    description="Propose work for a helper agent on a host (the available hosts are listed in the system "
                "message): a draft proposal the operator approves before anything runs. Its output lands in "
                "the lake.",
    run=run,
    parameters={"type": "object", "required": ["host", "task", "title"], "additionalProperties": False,
                "properties": {
                    "host": {"type": "string", "minLength": 1},
                    "task": {"type": "string", "minLength": 1, "description": "the full instructions for the helper"},
                    "title": {"type": "string", "minLength": 1},
                    "rationale": {"type": "string", "description": "why this is worth doing"},
                }},
))
