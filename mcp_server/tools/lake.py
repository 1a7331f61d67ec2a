"""The lake's tools: search (recall), view a delta with its provenance, remember (write a delta)."""

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from fathom.api.params import idempotency_key_clean
from lake.api import (
    DeltaDetailView,
    DeltaIn,
    DeltaListCreateView,
    DeltaOut,
    SearchRequestIn,
    SearchView,
    delta_detail,
)
from lake.search import DEPTHS, MAX_LIMIT
from lake.search import MODES as SEARCH_MODES
from lake.selectors import deltas_search
from lake.services import deltas_create
from mcp_server.calls import api_call, tool_result, validated

Mode = Literal[SEARCH_MODES]
Depth = Literal[tuple(DEPTHS)]


def search(query: Annotated[str, Field(description="what to recall, in words")],
           mode: Annotated[Mode, Field(description="hybrid: meaning and words fused; vector or text: one only")]
           = "hybrid",
           depth: Annotated[Depth, Field(description="how far around each hit to look (timeline, provenance)")]
           = "normal",
           limit: Annotated[int, Field(description=f"the most hits (1-{MAX_LIMIT})")] = 10,
           budget: Annotated[int | None, Field(description="characters of recall to return (about 4 a token)")]
           = None,
           tags: Annotated[list[str] | None, Field(description="tags every hit carries")] = None,
           kind: Annotated[str, Field(description="only deltas of this kind (the kind:<kind> tag)")] = "",
           source: Annotated[str, Field(description="only deltas from this source")] = "",
           since: Annotated[str | None, Field(description="only deltas from this moment on (ISO 8601)")] = None,
           until: Annotated[str | None, Field(description="only deltas before this moment (ISO 8601)")] = None,
           ) -> CallToolResult:
    """Recall from Fathom's memory (the lake) by meaning and words. The answer is the recall as a model
    reads it: each delta's id as [<id>] (cite those ids; view_delta opens one whole), the provenance
    (named stretches of memory) that contains what surfaced, and why nothing was found when nothing was."""
    with api_call(SearchView, "POST") as caller:
        filters = {name: value for name, value in (("tags", tags), ("kind", kind), ("source", source),
                                                   ("since", since), ("until", until)) if value}
        params = validated(SearchRequestIn, {"query": query, "mode": mode, "depth": depth, "limit": limit,
                                             "budget": budget, "filters": filters})
        result = deltas_search(workspace=caller.workspace, query=params["query"], mode=params["mode"],
                               depth=params["depth"], filters=params["filters"], limit=params["limit"],
                               budget=params["budget"])
        found = result.as_dict()
        text = result.rendered if not result.nothing_found else f"nothing found: {result.nothing_found}"
        return tool_result(found, text=text)


def view_delta(id: Annotated[str, Field(description="the delta's id, or a unique prefix of 8+ hex characters")],
               ) -> CallToolResult:
    """One delta of memory whole: its content, tags, source and time, with its provenance: the
    provenance deltas that contain it (parents) and, for a provenance, what it contains (children)."""
    with api_call(DeltaDetailView, "GET") as caller:
        return tool_result(delta_detail(workspace=caller.workspace, id_or_prefix=id))


def remember(content: Annotated[str, Field(description="what to remember, as it should be recalled")],
             tags: Annotated[list[str] | None, Field(description="tags, e.g. kind:note, project:apollo")] = None,
             source: Annotated[str, Field(description="where it comes from (an app, a person, a file)")] = "",
             created_at: Annotated[str | None, Field(description="when it happened (ISO 8601); now if absent")]
             = None,
             idempotency_key: Annotated[str, Field(description="send the same key on a retry: it writes nothing "
                                                               "twice and answers the delta written the first time")]
             = "",
             ) -> CallToolResult:
    """Write one delta (a moment of memory) into the lake. It is searchable by words at once and by
    meaning once embedded (seconds). Answers the delta with its id; `replayed` is true when the
    idempotency key had already written it."""
    with api_call(DeltaListCreateView, "POST") as caller:
        item = validated(DeltaIn, {"content": content, "tags": tags or [], "source": source,
                                   "created_at": created_at})
        written = deltas_create(workspace=caller.workspace, items=[item],
                                idempotency_key=idempotency_key_clean(idempotency_key))
        return tool_result({**DeltaOut(written.deltas[0]).data, "replayed": written.replayed})


def register(server: MCPServer) -> None:
    server.add_tool(search, annotations=ToolAnnotations(title="Search memory", read_only_hint=True))
    server.add_tool(view_delta, annotations=ToolAnnotations(title="View a delta", read_only_hint=True))
    server.add_tool(remember, annotations=ToolAnnotations(title="Remember", read_only_hint=False,
                                                          destructive_hint=False, idempotent_hint=False))
