"""The MCP server: Fathom's tools and resources on the SDK's MCPServer, the same for both transports
(stdio: mcp_server.cli; streamable HTTP: mcp_server.http)."""

from mcp.server.mcpserver import MCPServer

from mcp_server import resources
from mcp_server.tools import festinger, fires, lake, proposals

INSTRUCTIONS = (
    "Fathom is a memory you can reason over. `search` recalls what it holds (cite the [<id>]s it shows; "
    "`view_delta` opens one whole, with its provenance); `remember` writes a note; `ask` has Fathom answer a "
    "question from its memory, checked before it is given (the answer, its verdict and its citations); "
    "`introspect` asks Fathom about itself. `iknowthat` and `preview_recollection` reach its world model; "
    "`draft_proposal` and `list_pending_proposals` its operator's queue."
)


def fathom_server() -> MCPServer:
    """A new MCP server with every tool and resource; the caller of each request is its API key's."""
    server = MCPServer("fathom", title="Fathom", instructions=INSTRUCTIONS, log_level="WARNING")
    for module in (lake, fires, proposals, festinger, resources):
        module.register(server)
    return server
