"""mint_routine(name, schedule, prompt, route_to, title): propose a routine (a prompt run on a cron
schedule) as a `routines` proposal; approval creates it and its beat entry. It always belongs to
this fire's workspace."""

from harness.fires.tools.base import Tool, ToolContext, register
from harness.fires.tools.proposing import draft


def run(ctx: ToolContext, args: dict):
    payload = {"name": args["name"], "schedule": args["schedule"], "prompt": args["prompt"],
               "route": args.get("route_to", ""), "timezone": args.get("timezone") or "UTC"}
    return draft(ctx, tool="routines", title=args["title"], payload=payload, rationale=args.get("rationale", ""))


TOOL = register(Tool(
    name="mint_routine",
    description="Propose a scheduled routine: a prompt run on a cron schedule (minute hour day-of-month month "
                "day-of-week) in this workspace. A draft proposal the operator approves before it exists.",
    run=run,
    parameters={"type": "object", "required": ["name", "schedule", "prompt", "title"], "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$", "maxLength": 100},
                    "schedule": {"type": "string", "description": "cron, e.g. 0 7 * * 1-5"},
                    "prompt": {"type": "string", "minLength": 1},
                    "route_to": {"type": "string", "description": "the session (its river tag, e.g. this conversation's) "
                                 "whose next turn answers each run; default: the routine's own session"},
                    "timezone": {"type": "string", "default": "UTC"},
                    "title": {"type": "string", "minLength": 1},
                    "rationale": {"type": "string"},
                }},
))
