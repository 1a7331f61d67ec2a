"""What dispatch_helper and mint_routine share: a draft through the proposals service, once per
tool call (the producer names the call), never executed before an operator approves it."""

from fathom.errors import ApplicationError
from harness.fires.tools.base import ToolContext, ToolError
from proposals.models import Proposal
from proposals.services import proposal_draft


def draft(ctx: ToolContext, *, tool: str, title: str, payload: dict, rationale: str = "") -> dict:
    producer = f"harness:fire:{ctx.idempotency_key}"[:200]
    proposal = Proposal.objects.filter(workspace=ctx.workspace, producer=producer, tool=tool).first()
    if proposal is None:
        try:
            proposal = proposal_draft(workspace=ctx.workspace, tool=tool, title=title, payload=payload,
                                      rationale=rationale, producer=producer)
        except ApplicationError as exc:
            raise ToolError(exc.message) from None
    return {"proposal_id": proposal.pk, "tool": proposal.tool, "status": proposal.status,
            "note": "drafted: it waits for the operator's approval; nothing runs before that"}
