"""The harness's tools (seed 000's table), one small module each, gathered in a registry.

A tool is a name, a description the model reads, a JSON schema of its arguments, and a `run(ctx,
args)` returning its result (a string, or anything JSON-serialisable). Results go back to the model
whole. A tool that writes runs inside the transaction that records its result (`transactional`),
so a fire replayed after a crash writes nothing twice; one that calls models or runs a child fire
commits on its own and keys its work by `ctx.idempotency_key` instead."""

from harness.fires.tools.base import REGISTRY, Tool, ToolContext, ToolError, tool_specs, tools_for

__all__ = ["REGISTRY", "Tool", "ToolContext", "ToolError", "tool_specs", "tools_for"]
