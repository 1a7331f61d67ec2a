"""expand(delta_id): walk DOWN from a provenance (or sediment) to its from: constituents."""

from fathom.errors import ApplicationError
from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from lake.selectors import delta_get, provenance_children


def run(ctx: ToolContext, args: dict):
    try:
        delta = delta_get(workspace=ctx.workspace, id_or_prefix=args["delta_id"])
    except ApplicationError as exc:
        raise ToolError(exc.message) from None
    children = provenance_children(workspace=ctx.workspace, delta=delta)
    if not children:
        return f"[{delta.id}] has no constituents (it is not a provenance, or points at nothing)"
    lines = [f"[{delta.id}] {_first_line(delta.content)} contains {len(children)} delta(s):"]
    lines += [f"- [{c.id}] {c.created_at:%Y-%m-%d %H:%M} {c.source}: {c.content}" for c in children]
    return "\n".join(lines)


def _first_line(text: str) -> str:
    return (text or "").splitlines()[0] if text else ""


TOOL = register(Tool(
    name="expand",
    description="Walk down from a provenance to the deltas it wraps (its from: constituents), shown whole.",
    run=run,
    transactional=False,
    parameters={"type": "object", "required": ["delta_id"], "additionalProperties": False,
                "properties": {"delta_id": {"type": "string", "minLength": 4}}},
))
