"""respond(...): close the main loop. The loop itself handles this call (it ends the phase); this
module holds its schema and the validation of its arguments."""

from harness.fires.tools.base import Tool, ToolContext, ToolError, register

MOOD_SHIFT = {
    "type": "object", "additionalProperties": False, "required": ["direction", "axis", "magnitude"],
    "properties": {
        "direction": {"type": "string", "enum": ["+", "-"]},
        "axis": {"type": "string", "minLength": 1},
        "magnitude": {"type": "number", "minimum": 0.05, "maximum": 0.2},
        "reason": {"type": "string"},
    },
}
CARD = {
    "type": "object", "required": ["body"], "properties": {
        "kicker": {"type": "string"}, "title": {"type": "string"}, "body": {"type": "string", "minLength": 1},
        "route": {"type": "string"},
        # An artifact (seed 001): written to the lake as kind:<kind> with what it cites.
        "kind": {"type": "string", "enum": ["insight", "recommendation", "document"]},
        "citations": {"type": "array", "items": {
            "type": "object", "required": ["id"], "additionalProperties": False,
            "properties": {"id": {"type": "string"}, "quote": {"type": "string"}}}},
    },
}


def run(ctx: ToolContext, args: dict):
    # Never reached through the registry: the loop ends the phase on respond.
    raise ToolError("respond is handled by the loop")


def validate(args: dict) -> dict:
    """The response, normalised; a ToolError says what is missing."""
    body = (args.get("body") or "").strip()
    cards = args.get("cards") or []
    if not body and not cards:
        raise ToolError("respond needs a body or at least one card")
    if not body:
        body = "\n\n".join(c["body"] for c in cards)
    return {
        "body": body, "cards": cards, "attestation": (args.get("attestation") or "").strip(),
        "mood_shift": args.get("mood_shift") or None,
        "cited_ids": _ids(args.get("cited_ids")), "dropped_ids": _ids(args.get("dropped_ids")),
        "next_prompt": (args.get("next_prompt") or "").strip(),
        "directive": (args.get("directive") or "").strip(),
    }


def _ids(values) -> list[str]:
    seen = []
    for value in values or []:
        value = str(value).strip().strip("[]")
        if value and value not in seen:
            seen.append(value)
    return seen


TOOL = register(Tool(
    name="respond",
    run=run,
    description="Answer and close the fire. `body` for a plain reply, or `cards` for several. Add `attestation` "
                "(1-2 first-person sentences on what this fire taught you about yourself), `mood_shift` (a small "
                "drift on one affect axis), `cited_ids` (ids you used) and `dropped_ids` (ids you saw and judged "
                "irrelevant or wrong). Set `next_prompt` only when one layer has been surfaced and another wants "
                "attention: it becomes your next prompt; most fires omit it.",
    parameters={"type": "object", "additionalProperties": False, "properties": {
        "body": {"type": "string"},
        "cards": {"type": "array", "items": CARD},
        "attestation": {"type": "string"},
        "mood_shift": MOOD_SHIFT,
        "cited_ids": {"type": "array", "items": {"type": "string"}},
        "dropped_ids": {"type": "array", "items": {"type": "string"}},
        "next_prompt": {"type": "string"},
        "directive": {"type": "string", "description": "what you want to look into next, if this fire named it: "
                                                       "written as a kind:directive delta for the operator's inbox"},
    }},
))
