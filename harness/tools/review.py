"""The review pass's tools: propose_provenance (a draft through the proposals service and its gate)
or skip. Only offered in the post-response review pass."""

from harness.tools.base import REVIEW, Tool, ToolContext, register


def skip(ctx: ToolContext, args: dict):
    return {"outcome": "skip", "reason": args.get("reason", "")}


SKIP = register(Tool(
    name="skip",
    description="Nothing here to consolidate: end the fire.",
    run=skip,
    phases=(REVIEW,),
    parameters={"type": "object", "additionalProperties": False, "properties": {"reason": {"type": "string"}}},
))
