"""Festinger's tools: state a fact of the world model (/iknowthat), preview a recollection."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from festinger.api import IKnowThatView, fact_store
from festinger.iknowthat import SYNTAX
from festinger.recollection_api import RecollectionView, recollection_preview
from mcp_server.calls import api_call, tool_result, validated


def iknowthat(fact: Annotated[str, Field(description=SYNTAX)]) -> CallToolResult:
    """Tell Fathom's world model a fact you know for sure (confidence 1.0): a concept is a kind of
    something, or a part of something, in a context. Answers the edge it wrote, or the conflict it
    queued when the fact collides with what the model holds (resolved by its resolution job)."""
    with api_call(IKnowThatView, "POST") as caller:
        fact = validated(IKnowThatView.Input, {"fact": fact})["fact"]
        return tool_result(fact_store(workspace=caller.workspace, fact=fact))


def preview_recollection(text: Annotated[str, Field(description="the text a model call would carry")],
                         ) -> CallToolResult:
    """What Fathom's world model would recall for this text: the <recollection> block a model call with
    it would get now, the concepts recalled, and the salient ones it knows nothing about. A preview:
    nothing is counted or learned."""
    with api_call(RecollectionView, "GET") as caller:
        text = validated(RecollectionView.Params, {"text": text})["text"]
        found = recollection_preview(workspace_id=caller.workspace.pk, text=text)
        return tool_result(found, text=found["block"] or "nothing to recall for this text")


def register(server: MCPServer) -> None:
    server.add_tool(iknowthat, annotations=ToolAnnotations(title="I know that", read_only_hint=False,
                                                           destructive_hint=False, idempotent_hint=True))
    server.add_tool(preview_recollection, annotations=ToolAnnotations(title="Preview a recollection",
                                                                      read_only_hint=True))
