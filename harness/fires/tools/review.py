"""The review pass's tools: propose_provenance (a draft through the proposals service and its gate)
or skip. Only offered in the post-response review pass."""

from fathom.errors import ApplicationError
from harness.fires.tools.base import REVIEW, Tool, ToolContext, ToolError, register
from harness.fires.tools.respond import MOOD_SHIFT
from proposals.services import proposal_draft

# What the review supplies when the answer carried none (harness.fires.writes.review_writes).
STANDPOINT = {
    "attestation": {"type": "string", "description": "only when the answer gave none: 1-2 first-person sentences "
                                                     "on what this fire taught you about yourself"},
    "mood_shift": {**MOOD_SHIFT, "description": "only when the answer gave none: a small drift on one affect axis"},
}


def skip(ctx: ToolContext, args: dict):
    return {"outcome": "skip", "reason": args.get("reason", "")}


SKIP = register(Tool(
    name="skip",
    description="Nothing here to consolidate: end the fire.",
    run=skip,
    phases=(REVIEW,),
    parameters={"type": "object", "additionalProperties": False, "properties": {
        "reason": {"type": "string"}, **STANDPOINT}},
))


def propose_provenance(ctx: ToolContext, args: dict):
    try:
        proposal = proposal_draft(
            workspace=ctx.workspace, tool="provenance", title=args["title"], rationale=args.get("rationale", ""),
            producer=f"harness:fire:{ctx.fire.pk}", level=args["level"],
            payload={"from_ids": args["from_ids"], "summary": args.get("summary", ""),
                     "test_questions": args.get("test_questions", []), "tags": [f"fire:{ctx.fire.pk}"]},
        )
    except ApplicationError as exc:
        raise ToolError(exc.message) from None
    return {"outcome": "proposed", "proposal_id": proposal.pk, "status": proposal.status, "level": proposal.level}


PROPOSE = register(Tool(
    name="propose_provenance",
    description="Draft a provenance: a named stretch one level above its constituents (1 episode, 2 topic, 3 era). "
                "Levels 1-2 are approved at once by the workspace's policy; 3+ wait for an operator.",
    run=propose_provenance,
    phases=(REVIEW,),
    parameters={"type": "object", "required": ["level", "title", "from_ids"], "additionalProperties": False,
                "properties": {
                    "level": {"type": "integer", "minimum": 1, "maximum": 8},
                    "title": {"type": "string", "minLength": 1},
                    "summary": {"type": "string"},
                    "from_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "rationale": {"type": "string"},
                    "test_questions": {"type": "array", "items": {"type": "string"}},
                    **STANDPOINT,
                }},
))
