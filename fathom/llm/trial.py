"""Trying a registry model: one call, traced, so an application sees that a model, its key and its base
URL work (POST /v1/llm/models/{name}/test, `fathom llm models test`)."""

from __future__ import annotations

from fathom.llm.client import complete
from fathom.llm.errors import LLMError
from fathom.llm.models import LLMModel
from fathom.llm.registry import from_row
from fathom.llm.types import Message
from fathom.tracing import span
from fathom.tracing.selectors import trace_get


def model_try(*, workspace, model: LLMModel, prompt: str, actor_id: str) -> dict:
    """Call `model` once with `prompt` in `workspace` (the caller's, whom the call is accounted to).
    Returns ok, the reply or the provider's error, and the call's trace (as GET /v1/traces/{id}); a
    failing model is an answer here, not an error."""
    reply, error = "", ""
    with span("llm.test", workspace=workspace, actor_id=actor_id, registry_model=model.name) as root:
        try:
            reply = complete(workspace=workspace, role="test", messages=[Message.user(prompt)], model=from_row(model),
                             actor_id=actor_id).text
        except LLMError as exc:
            error = exc.message
    return {"ok": not error, "reply": reply, "error": error, "trace_id": root.trace_id,
            "trace": trace_get(workspace=workspace, trace_id=root.trace_id)}
