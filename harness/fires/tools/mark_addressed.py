"""mark_addressed(user_message_id, note): tick a user message off the unaddressed list. Messages left
unaddressed fire the session again on the next tick."""

from fathom.errors import NotFoundError
from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from harness.runtime.services import message_mark_addressed


def run(ctx: ToolContext, args: dict):
    fire = ctx.fire
    if fire.session_id is None:
        raise ToolError("this fire has no session, so there are no messages to mark")
    pending = {str(m["id"]) for m in fire.work_set.get("messages", [])}
    message_id = str(args["user_message_id"]).strip().strip("[]")
    if message_id not in pending:
        raise ToolError(f"{message_id} is not one of this fire's messages: {', '.join(sorted(pending)) or 'none'}")
    try:
        message_mark_addressed(session_id=fire.session_id, trigger_id=message_id, note=args.get("note", ""))
    except NotFoundError as exc:
        raise ToolError(exc.message) from None
    return f"marked {message_id} addressed"


TOOL = register(Tool(
    name="mark_addressed",
    run=run,
    description="Tick one user message off the unaddressed list once you have dealt with it. Anything left "
                "unaddressed fires again on the next tick, so intent never silently vanishes.",
    parameters={"type": "object", "required": ["user_message_id"], "additionalProperties": False, "properties": {
        "user_message_id": {"type": "string", "description": "the id shown with the message"},
        "note": {"type": "string", "description": "how it was addressed"},
    }},
))
