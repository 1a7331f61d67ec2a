"""ascend(delta_id): walk UP from a delta to the provenance that contains it (episode, topic, era)."""

from fathom.errors import ApplicationError
from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from lake.selectors import delta_get, provenance_parents


def run(ctx: ToolContext, args: dict):
    try:
        delta = delta_get(workspace=ctx.workspace, id_or_prefix=args["delta_id"])
    except ApplicationError as exc:
        raise ToolError(exc.message) from None
    ancestors = provenance_parents(workspace=ctx.workspace, delta_ids=[delta.id])
    if not ancestors:
        return f"nothing contains [{delta.id}] yet"
    lines = [f"containers of [{delta.id}]:"]
    for found in sorted(ancestors, key=lambda a: a.depth):
        title = (found.delta.content or "").splitlines()[0] if found.delta.content else ""
        lines.append(f"{'  ' * (found.depth - 1)}- [{found.delta.id}] L{found.delta.level} {title} "
                     f"(contains [{found.child_id}])")
    return "\n".join(lines)


TOOL = register(Tool(
    name="ascend",
    description="Walk up from a delta to the provenance containing it, and what contains that (up to 3 levels).",
    run=run,
    transactional=False,
    parameters={"type": "object", "required": ["delta_id"], "additionalProperties": False,
                "properties": {"delta_id": {"type": "string", "minLength": 4}}},
))
