"""view_full(delta_id): the escape hatch for a truncated lens result or a compacted history entry:
one delta, whole, with its tags, source and time."""

from fathom.errors import ApplicationError
from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from lake.selectors import delta_get


def run(ctx: ToolContext, args: dict):
    try:
        delta = delta_get(workspace=ctx.workspace, id_or_prefix=args["delta_id"])
    except ApplicationError as exc:
        raise ToolError(exc.message) from None
    media = f"\nmedia: {delta.media_hash} (open it with see_image)" if delta.media_hash else ""
    return (f"[{delta.id}] {delta.created_at:%Y-%m-%d %H:%M} {delta.source or '(no source)'}\n"
            f"tags: {' '.join(delta.tags) or '(none)'}{media}\n\n{delta.content}")


TOOL = register(Tool(
    name="view_full",
    description="One delta's complete content, tags, source and time: when a lens result or the compacted "
                "history cut it short.",
    run=run,
    transactional=False,
    parameters={"type": "object", "required": ["delta_id"], "additionalProperties": False,
                "properties": {"delta_id": {"type": "string", "minLength": 4}}},
))
