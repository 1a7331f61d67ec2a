"""Resources: a delta and a fire by id, as REST's detail views show them."""

import json

from mcp.server.mcpserver import MCPServer

from harness.fires.api import FireDetailView, fire_detail
from harness.fires.selectors import fire_get
from lake.api import DeltaDetailView, delta_detail
from mcp_server.calls import api_call, as_json

DELTA_URI = "fathom://deltas/{delta_id}"
FIRE_URI = "fathom://fires/{fire_id}"


def delta(delta_id: str) -> str:
    """A delta of memory whole, with its provenance parents and children (as view_delta answers)."""
    with api_call(DeltaDetailView, "GET", resource=True) as caller:
        return json.dumps(as_json(delta_detail(workspace=caller.workspace, id_or_prefix=delta_id)))


def fire(fire_id: str) -> str:
    """A fire (a run of Fathom's agent: an `ask`, an introspection): its question, answer, verdict,
    turns, tool calls, trace and cost."""
    with api_call(FireDetailView, "GET", resource=True) as caller:
        return json.dumps(as_json(fire_detail(fire_get(workspace=caller.workspace, fire_id=fire_id))))


def register(server: MCPServer) -> None:
    server.resource(DELTA_URI, name="delta", mime_type="application/json")(delta)
    server.resource(FIRE_URI, name="fire", mime_type="application/json")(fire)
