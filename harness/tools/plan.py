"""plan(question): decompose a synthesis question into a 2-4 step checklist. The active plan renders
into the prompt on later turns with progress markers; tool calls declare `plan_step`."""

from fathom.llm import LLMError, Message, complete
from harness.tools.base import Tool, ToolContext, ToolError, register

MARKERS = {"pending": "○", "in_flight": "⟳", "done": "✓"}
PLANNER_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "plan", "schema": {
        "type": "object", "additionalProperties": False, "required": ["steps"],
        "properties": {"steps": {"type": "array", "items": {"type": "string"}, "minItems": 0, "maxItems": 4}},
    }},
}


def run(ctx: ToolContext, args: dict):
    steps = [s.strip() for s in args.get("steps") or [] if s and s.strip()]
    if not steps:
        steps = _ask_planner(ctx, args["question"])
    if not steps:
        steps = [args["question"]]
    ctx.fire.plan = [{"step": n, "text": text, "status": "pending"} for n, text in enumerate(steps[:4], 1)]
    ctx.fire.save(update_fields=["plan"])
    return "plan set; declare plan_step:<n> on the calls that work on a step.\n" + render(ctx.fire.plan)


def render(plan: list[dict]) -> str:
    return "\n".join(f"{MARKERS.get(s['status'], '○')} {s['step']}. {s['text']}" for s in plan)


def advance(plan: list[dict], step: int | None) -> bool:
    """Mark `step` in flight and the steps before it done; True if anything changed."""
    if not plan or step is None or not 1 <= step <= len(plan):
        return False
    changed = False
    for entry in plan:
        status = "done" if entry["step"] < step else ("in_flight" if entry["step"] == step else entry["status"])
        if entry["step"] > step and entry["status"] == "in_flight":
            status = "pending"
        if status != entry["status"]:
            entry["status"], changed = status, True
    return changed


def finish(plan: list[dict]) -> None:
    for entry in plan:
        entry["status"] = "done" if entry["status"] == "in_flight" else entry["status"]


def _ask_planner(ctx: ToolContext, question: str) -> list[str]:
    try:
        completion = complete(workspace=ctx.workspace, role="planner", response_format=PLANNER_SCHEMA, messages=[
            Message.system("Decompose the question into 2-4 concrete steps, each one thing to look up or "
                           "compare. Answer as JSON: {\"steps\": [...]}."),
            Message.user(question)])
        steps = completion.json().get("steps") or []
    except (LLMError, ValueError, AttributeError) as exc:
        raise ToolError(f"the planner failed: {exc}; pass `steps` yourself") from None
    return [str(s) for s in steps if str(s).strip()]


TOOL = register(Tool(
    name="plan",
    run=run,
    description="Decompose a comparison/connection/synthesis question into a 2-4 step checklist. Call it on "
                "turn 1 for such questions, then work through the steps, declaring plan_step:<n> on each call. "
                "Calling it again replaces the plan.",
    parameters={"type": "object", "required": ["question"], "additionalProperties": False, "properties": {
        "question": {"type": "string", "minLength": 1},
        "steps": {"type": "array", "items": {"type": "string"}, "maxItems": 4,
                  "description": "the steps, if you already know them (otherwise the planner writes them)"},
    }},
))
