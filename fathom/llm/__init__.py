"""The model layer: one call shape for every model in the project.

    from fathom.llm import complete, Message, ToolSpec, ToolCall, Completion

    completion = complete(workspace=ws, role="main", messages=[Message.system("..."), Message.user("...")],
                          tools=[ToolSpec("search", "Search the lake", {...json schema...})])
    completion.text, completion.tool_calls, completion.usage, completion.cost, completion.latency_ms

    completion = complete(..., stream=on_chunk)   # on_chunk(StreamChunk) per text or thinking delta / tool call, as they come

    embeddings = embed(workspace=ws, model="offline", texts=["..."])   # .vectors, .usage (a registry model's)

Roles (`ROLES`; any lowercase word works, these are the ones the admin offers) map to registry
models per workspace (`fathom.llm.models`; a role with no row of its own takes its parent's, see
`fathom.llm.registry.PARENT_ROLES`); with none configured the offline model answers
(`fathom.llm.offline`). Tests script answers with `fathom.llm.scripted.Script`. Failures raise
`fathom.llm.errors.LLMError` subclasses. See `fathom.llm.client` for the options."""

from fathom.llm.client import complete, embed
from fathom.llm.errors import LLMError
from fathom.llm.middleware import LLMRequest, ModelMiddleware
from fathom.llm.types import (
    Completion,
    Embeddings,
    ImageRef,
    Message,
    StopReason,
    StreamChunk,
    ToolCall,
    ToolSpec,
    Usage,
)

ROLES = ("main", "review", "verifier", "classifier", "judge", "planner", "writer", "resolver", "focus", "embedder",
         "conductor", "terminal")

__all__ = [
    "ROLES", "Completion", "Embeddings", "ImageRef", "LLMError", "LLMRequest", "Message", "ModelMiddleware",
    "StopReason", "StreamChunk", "ToolCall", "ToolSpec", "Usage", "complete", "embed",
]
