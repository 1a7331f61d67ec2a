"""plan(question): decompose a synthesis question into a 2-4 step checklist. The active plan renders
into the prompt on later turns with progress markers; tool calls declare `plan_step`.

Seed 000's plan refinements are recorded on the fire (`plan_events`, shown in GET /v1/fires/{id}),
each also a trace span and a session AgentStream event:
- a revision: plan called again while a plan is active: the steps before and after, what was added
  and dropped, how far the old plan had got, and the model's `why`;
- a drift: while a plan is active, a call (other than plan, respond, mark_addressed) that declares
  no plan_step, a step that does not exist, a step already done (going back), or a step whose text
  names tools other than the one called."""

import re

from fathom.llm import LLMError, Message, complete
from fathom.tracing import span
from harness.fires.tools.base import REGISTRY, Tool, ToolContext, ToolError, register

PLAN_NEUTRAL = {"plan", "respond", "mark_addressed", "skip", "propose_provenance"}

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
    before = ctx.fire.plan
    ctx.fire.plan = [{"step": n, "text": text, "status": "pending"} for n, text in enumerate(steps[:4], 1)]
    if before:
        old, new = [s["text"] for s in before], [s["text"] for s in ctx.fire.plan]
        _event_record(ctx.fire, {
            "kind": "revision", "turn": ctx.turn_number, "call_id": ctx.call_id, "why": args.get("why", ""),
            "before": old, "after": new, "added": [t for t in new if t not in old],
            "dropped": [t for t in old if t not in new],
            "done_before": [s["step"] for s in before if s["status"] == "done"]})
    ctx.fire.save(update_fields=["plan", "plan_events"])
    revised = "plan revised (the revision is recorded)" if before else "plan set"
    return f"{revised}; declare plan_step:<n> on the calls that work on a step.\n" + render(ctx.fire.plan)


def call_event(fire, turn_number: int, call: dict, plan_step: int | None, *, ok: bool) -> dict | None:
    """The plan event a recorded tool call makes, if any: the revision its plan call recorded, or a
    drift from the active plan (recorded here). Call it before `advance`."""
    name = call["name"]
    if name == "plan":
        revision = next((e for e in fire.plan_events if e.get("call_id") == call["id"]), None)
        if revision is not None and not ok:  # the call failed and was rolled back: so was its revision
            fire.plan_events.remove(revision)
            return None
        return revision
    reason = drift_reason(fire.plan, name, plan_step)
    if reason is None:
        return None
    return _event_record(fire, {"kind": "drift", "turn": turn_number, "call_id": call["id"], "tool": name,
                                "plan_step": plan_step, "reason": reason})


def drift_reason(plan: list[dict], tool: str, step: int | None) -> str | None:
    """Why a call of `tool` declaring `step` does not follow the active plan (None when it does)."""
    if not plan or tool in PLAN_NEUTRAL:
        return None
    if step is None:
        return "no plan_step declared while a plan is active"
    entry = next((s for s in plan if s["step"] == step), None)
    if entry is None:
        return f"step {step} does not exist (the plan has {len(plan)} steps)"
    if entry["status"] == "done":
        return f"step {step} is done already: going back to it"
    named = {word for word in re.findall(r"[a-z_]+", entry["text"].lower()) if word in REGISTRY} - PLAN_NEUTRAL
    if named and tool not in named:
        return f"step {step} names {', '.join(sorted(named))}; {tool} was called"
    return None


def _event_record(fire, event: dict) -> dict:
    fire.plan_events = [*fire.plan_events, event]
    attributes = {k: v for k, v in event.items() if k != "kind" and isinstance(v, (str, int, type(None)))}
    with span(f"plan.{event['kind']}", workspace=fire.workspace_id, actor_id=f"fire:{fire.pk}", run_id=str(fire.pk),
              **attributes):
        pass
    return event


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
        "why": {"type": "string", "description": "when replacing an active plan: why it changes"},
    }},
))
