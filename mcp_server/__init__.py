"""Fathom as an MCP server (the official `mcp` SDK): the lake, questions answered through the quality
harness, introspection, proposals and Festinger as MCP tools and resources, over stdio (`manage.py
fathom mcp`) and streamable HTTP on the main port (`/mcp`). Every tool is one call into the services
and selectors the REST view it mirrors calls, with that view's input and output serializers, its role
rule and its error messages (docs/mcp.md)."""
