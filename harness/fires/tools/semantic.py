"""semantic(query, depth): recall from the lake by meaning (the lake's compositional search), rendered
with [<id>] slugs and the containers-active block, returned whole; when nothing is found, the
search's reason (small words only, nothing above the relevance floor), so the model can ask again
better rather than conclude the lake is empty."""

from fathom.errors import ApplicationError
from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from lake.search import deltas_search


def run(ctx: ToolContext, args: dict):
    try:
        result = deltas_search(workspace=ctx.workspace, query=args["query"], depth=args.get("depth", "normal"),
                               limit=args.get("limit", 10))
    except ApplicationError as exc:
        raise ToolError(exc.message) from None
    if result.nothing_found:
        return f"nothing in the lake matches {args['query']!r}: {result.nothing_found}"
    return result.rendered


TOOL = register(Tool(
    name="semantic",
    description="Recall from the lake by meaning: content-anchored questions (\"tell me about X\"). Results show "
                "each delta's id as [<id>]; provenance (named stretches) that contain what surfaced is listed first.",
    run=run,
    transactional=False,
    parameters={"type": "object", "required": ["query"], "additionalProperties": False, "properties": {
        "query": {"type": "string", "minLength": 1},
        "depth": {"type": "string", "enum": ["shallow", "normal", "deep"], "default": "normal"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
    }},
))
