"""introspect(question): a child fire, run inline, answers a scoped question with the full toolset
minus recursion and side-effect tools; it writes its own card. Depth is capped at 1."""

from harness.fires.services import fire_create, fire_run
from harness.fires.tools.base import Tool, ToolContext, ToolError, register

MAX_DEPTH = 1
CHILD_DISABLED = ("introspect", "dispatch_helper", "mint_routine")


def run(ctx: ToolContext, args: dict):
    parent = ctx.fire
    if parent.depth >= MAX_DEPTH:
        raise ToolError(f"introspection is capped at depth {MAX_DEPTH}")
    child = fire_create(
        workspace=parent.workspace, mode="introspective", question=args["question"], parent=parent,
        disabled_tools=sorted(set(CHILD_DISABLED) | set(parent.disabled_tools)), spawned_by=ctx.idempotency_key,
        session=None,
    )
    child = fire_run(fire_id=child.pk)
    if child.status != "finished":
        raise ToolError(f"the child fire {child.pk} ended {child.status}: {child.error or child.stop_reason}")
    return {"fire_id": str(child.pk), "card_id": child.writes.get("card"), "body": child.response.get("body", ""),
            "cited_ids": child.response.get("cited_ids", [])}


TOOL = register(Tool(
    name="introspect",
    description="Ask yourself a scoped question: a full child fire (every tool except introspect, dispatch_helper "
                "and mint_routine) answers it and writes its own card; you get its answer.",
    run=run,
    transactional=False,
    parameters={"type": "object", "required": ["question"], "additionalProperties": False, "properties": {
        "question": {"type": "string", "minLength": 1},
    }},
))
