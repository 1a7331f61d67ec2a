"""The MCP tools, by the app whose services they call; each module's `register(server)` adds its tools."""
