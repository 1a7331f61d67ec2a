"""The proposals' tools: draft a proposal, list the ones waiting for a decision."""

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_server.calls import api_call, tool_result, validated
from proposals.api import ProposalDraftView, ProposalListView, ProposalOutput, proposal_draft_output
from proposals.models import ProposalStatus
from proposals.selectors import proposals_list

MAX_LISTED = 100


def draft_proposal(tool: Annotated[str, Field(description="what to do: provenance (name a stretch of memory: payload "
                                                          "{from_ids, summary, level?, tags?}), routines, "
                                                          "helper-dispatch")],
                   title: Annotated[str, Field(description="a short title an operator reads")],
                   payload: Annotated[dict[str, Any], Field(description="the tool's payload")],
                   rationale: Annotated[str, Field(description="why")] = "",
                   level: Annotated[int | None, Field(description="provenance: the level (1 episode, 2 topic, "
                                                                  "3 era); omitted: one above its constituents")]
                   = None,
                   ) -> CallToolResult:
    """Propose a change for the operator (or the auto-policy) to decide: nothing happens before approval.
    Provenance at level 1 or 2 is approved at once; the rest waits. Answers the proposal and its status."""
    with api_call(ProposalDraftView, "POST") as caller:
        fields = validated(ProposalDraftView.Input, {"tool": tool, "title": title, "payload": payload,
                                                     "rationale": rationale, "level": level})
        return tool_result(proposal_draft_output(workspace=caller.workspace, fields=fields, actor_id=caller.actor_id))


def list_pending_proposals(tool: Annotated[str, Field(description="only proposals of this tool")] = "",
                           limit: Annotated[int, Field(ge=1, le=MAX_LISTED, description="the most to list")] = 20,
                           ) -> CallToolResult:
    """The proposals waiting for an operator's decision, newest first."""
    with api_call(ProposalListView, "GET") as caller:
        filters = validated(ProposalListView.Filters, {"tool": tool} if tool else {})
        proposals = proposals_list(workspace=caller.workspace, status=ProposalStatus.PENDING, **filters)
        return tool_result({"proposals": ProposalOutput(proposals[:limit], many=True).data})


def register(server: MCPServer) -> None:
    server.add_tool(draft_proposal, annotations=ToolAnnotations(title="Draft a proposal", read_only_hint=False,
                                                                destructive_hint=False))
    server.add_tool(list_pending_proposals, annotations=ToolAnnotations(title="Pending proposals",
                                                                        read_only_hint=True))
