"""`fathom mcp`: the MCP server over stdio, for clients that spawn it (Claude Desktop, Claude Code,
Cursor, ...). It acts with one API key of the workspace it names, for its whole life."""

import anyio
from django.conf import settings
from django.core.management.base import CommandError
from django.db import connections

from mcp_server.callers import acting_as, caller_authenticate
from mcp_server.server import fathom_server


def register(subparsers):
    mcp = subparsers.add_parser(
        "mcp", help="serve Fathom to an MCP client over stdio (the same tools as /mcp on the main port)",
        description="Speaks MCP on standard input and output until the client closes them. The key decides what "
                    "the client may do, as on REST: a viewer's key reads, never writes.")
    mcp.add_argument("--workspace", required=True, help="the workspace's slug (the key must be one of its keys)")
    mcp.add_argument("--key", default=settings.FATHOM_API_KEY,
                     help="an API key of the workspace (default: FATHOM_API_KEY)")
    mcp.set_defaults(handler=_serve)


def _serve(command, options):
    caller = caller_authenticate(options["key"] or "")
    if caller is None:
        raise CommandError("an API key of the workspace is needed: --key or FATHOM_API_KEY (this one is unknown, "
                           "revoked or absent)")
    if caller.workspace.slug != options["workspace"]:
        raise CommandError(f"the key belongs to workspace {caller.workspace.slug!r}, not {options['workspace']!r}")
    connections.close_all()  # each tool call takes its own, on its thread
    with acting_as(caller, options["key"]):
        anyio.run(fathom_server().run_stdio_async)
