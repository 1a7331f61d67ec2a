"""The one way the project calls a model: `complete(...)`, by role, for a workspace, streamed or not
(and `embed(...)` for a registry model's embeddings).

Every call resolves the role's model (`fathom.llm.registry`), spends one call of its trace's budget
(`fathom.llm.budget`: past the ceiling it is not made), runs the model middleware around the
provider (`fathom.llm.middleware`), retries what may be retried (`fathom.llm.retry`), prices the
usage, and traces itself as an `llm.call` span (started, then completed or failed, with the error's
`code`) under whatever span is current. The start is written before the call goes out (with
whatever the trace buffered until then), so a trace shows a call in flight, and one whose process
died in it.

Options understood here (everything else goes to the provider, e.g. temperature, max_tokens,
tool_choice, stop, seed): `actor_id` (who is calling, for the trace; default: the current span's),
`call_id`, `model` (a registry model name, or "provider:model", instead of the role's),
`max_attempts`, `deadline` (seconds for all attempts), `offline_policy` (see `fathom.llm.offline`),
`fresh_context` (no model middleware: nothing recalled into the prompt, nothing learned from it)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from fathom.llm import middleware, registry
from fathom.llm.budget import budget_spend
from fathom.llm.errors import LLMBadRequest, LLMEmptyCompletion, LLMError, LLMStreamInterrupted
from fathom.llm.middleware import LLMRequest
from fathom.llm.providers import get_provider
from fathom.llm.retry import Attempts, RetryPolicy
from fathom.llm.types import Completion, Embeddings, Message, StreamChunk, ToolSpec
from fathom.tracing.spans import flush, span

SUMMARY_CHARS = 500


def complete(*, workspace, role: str, messages: Iterable[Message], tools: Iterable[ToolSpec] | None = None,
             response_format: dict | None = None, stream: Callable[[StreamChunk], object] | None = None,
             **options) -> Completion:
    """Ask the model that answers `role` in `workspace`; returns its Completion or raises an LLMError.

    With `stream` (a callable), the answer is streamed: `stream(chunk)` is called with each text
    delta (`chunk.text`), thinking delta (`chunk.thinking`) and finished tool call (`chunk.tool_call`)
    as they arrive, in order,
    and the same Completion is returned at the end (its text is the deltas joined, unless a
    middleware's `after` replaced it). Retried only until the first chunk arrives; a stream that breaks later raises LLMStreamInterrupted. An
    exception raised by `stream` abandons the call and propagates."""
    request, actor_id = _request(workspace, role, messages, tools, response_format, options,
                                 stream=stream is not None)
    with span("llm.call", workspace=request.workspace_id, actor_id=actor_id, call_id=request.call_id,
              **request_summary(request)) as call:
        request.trace_id = call.trace_id
        flush()
        try:
            _budget_spend(request, call)
            entered, answer = middleware.run_before(request)
            if answer is None:
                answer = _call_with_retries(request, call) if stream is None else \
                    _stream_with_retries(request, call, stream)
            elif stream is not None:
                _replay(answer, stream)
            completion = middleware.run_after(entered, request, answer)
        except LLMError as exc:
            call.set(code=exc.code)
            raise
        call.set(**response_summary(completion))
        return completion


def embed(*, workspace, model, texts: Iterable[str], actor_id: str | None = None) -> Embeddings:
    """`texts` embedded by the registry model `model` (a ResolvedModel, a registry name or
    "provider:model"): the offline model answers with the project's configured embedder, an openai
    or openai-compatible model with its provider's embeddings endpoint; a provider with none raises
    LLMBadRequest. Retried as `complete` is, and traced as an `llm.embed` span."""
    texts = list(texts)
    resolved = _resolved(model, workspace=workspace)
    provider = get_provider(resolved.provider)
    if not hasattr(provider, "embed"):
        raise LLMBadRequest(f'"{resolved.name}" does not support embeddings ({resolved.provider} models have none)',
                            provider=resolved.provider, model=resolved.model, http_status=400)
    request = LLMRequest(workspace_id=getattr(workspace, "pk", workspace), role="embedder", model=resolved,
                         messages=[], call_id=f"llm-{secrets.token_hex(6)}")
    with span("llm.embed", workspace=request.workspace_id, actor_id=actor_id, call_id=request.call_id,
              model=resolved.model, provider=resolved.provider, registry_model=resolved.name, texts=len(texts)) as call:
        attempts = _attempts(request, call)
        started = time.perf_counter()
        while True:
            try:
                answer = provider.embed(request, texts, timeout=attempts.timeout())
                break
            except LLMError as exc:
                attempts.failed(exc)
        call.set(input_tokens=answer.usage.input_tokens, latency_ms=round((time.perf_counter() - started) * 1000, 3),
                 attempts=attempts.number, embedder=answer.model)
    return answer


# --- the pieces -------------------------------------------------------------------------------------------

def _request(workspace, role, messages, tools, response_format, options, *, stream) -> tuple[LLMRequest, str]:
    if not isinstance(role, str) or not role:
        raise ValueError("role must be a non-empty string, e.g. 'main'")
    workspace_id = getattr(workspace, "pk", workspace)
    options = dict(options)
    actor_id = options.pop("actor_id", None)
    call_id = options.pop("call_id", None) or f"llm-{secrets.token_hex(6)}"
    chosen = options.pop("model", None)
    fresh_context = bool(options.pop("fresh_context", False))
    model = registry.resolve(workspace=workspace_id, role=role) if chosen is None else _resolved(chosen, workspace=workspace_id)
    merged = {**model.options, **options}
    request = LLMRequest(workspace_id=workspace_id, role=role, model=model, messages=list(messages),
                         tools=list(tools) if tools else None, response_format=response_format,
                         options=merged, stream=stream, call_id=call_id)
    if fresh_context:
        request.metadata["fresh_context"] = True
    return request, actor_id


def _resolved(chosen, *, workspace) -> registry.ResolvedModel:
    """A model named by the caller: a ResolvedModel, "provider:model", or a registry name the workspace
    may use."""
    if isinstance(chosen, registry.ResolvedModel):
        return chosen
    if ":" in chosen:
        return registry.from_spec(chosen)
    return registry.model_by_name(chosen, workspace=workspace)


def _budget_spend(request: LLMRequest, call) -> None:
    if not call.parent_span_id:
        return  # a call outside any span is a trace of its own: its one call is under every ceiling
    budget_spend(trace_id=call.trace_id, role=request.role, provider=request.model.provider,
                 model=request.model.model)


def _call_with_retries(request: LLMRequest, call) -> Completion:
    provider = get_provider(request.model.provider)
    attempts = _attempts(request, call)
    started = time.perf_counter()
    while True:
        try:
            answer = _not_empty(request, provider.complete(request, timeout=attempts.timeout()))
            break
        except LLMError as exc:
            attempts.failed(exc)
    return _finished(request, answer, started, attempts.number)


def _stream_with_retries(request: LLMRequest, call, deliver) -> Completion:
    """Hands the provider's chunks (not its last one) to `deliver`; returns the finished Completion."""
    provider = get_provider(request.model.provider)
    attempts = _attempts(request, call)
    started = time.perf_counter()
    while True:
        chunks = provider.stream(request, timeout=attempts.timeout())
        try:
            first = next(chunks)
            if first.completion is not None:  # nothing was streamed: an empty answer is retried
                _not_empty(request, first.completion)
            break
        except StopIteration:
            raise LLMStreamInterrupted("the stream ended before it began", provider=request.model.provider,
                                       model=request.model.model) from None
        except LLMError as exc:
            attempts.failed(exc)
    chunk = first
    while True:
        if chunk.completion is not None:
            return _finished(request, _not_empty(request, chunk.completion), started, attempts.number)
        deliver(chunk)
        try:
            chunk = next(chunks)
        except StopIteration:
            raise LLMStreamInterrupted("the stream ended without a final message", provider=request.model.provider,
                                       model=request.model.model) from None
        except LLMError as exc:
            if isinstance(exc, LLMStreamInterrupted):
                raise
            raise LLMStreamInterrupted(f"the stream broke after it started: {exc.message}", provider=exc.provider,
                                       model=exc.model, http_status=exc.http_status,
                                       request_id=exc.request_id) from exc


def _not_empty(request: LLMRequest, answer: Completion) -> Completion:
    """The provider's answer, unless it holds neither text nor a tool call (thinking alone is no answer)."""
    if answer.text.strip() or answer.tool_calls:
        return answer
    raise LLMEmptyCompletion(f"{request.model.provider} model {request.model.model} answered with neither text "
                             f"nor a tool call (stop reason: {answer.stop_reason})", provider=request.model.provider,
                             model=request.model.model, request_id=answer.request_id)


def _attempts(request: LLMRequest, call) -> Attempts:
    policy = RetryPolicy.from_options(request.options)

    def on_retry(*, attempt, wait, error):
        call.event("llm.call.retry", attempt=attempt, wait_seconds=round(wait, 3), error=error.code,
                   message=error.message[:300], http_status=error.http_status)

    return Attempts(policy, timeout=request.model.timeout_seconds, on_retry=on_retry)


def _finished(request: LLMRequest, answer: Completion, started: float, attempts: int) -> Completion:
    usage = answer.usage
    return replace(
        answer, cost=request.model.cost(usage.input_tokens, usage.output_tokens, usage.cached_tokens),
        latency_ms=(time.perf_counter() - started) * 1000, model=answer.model or request.model.model,
        provider=answer.provider or request.model.provider, call_id=request.call_id, trace_id=request.trace_id,
        attempts=attempts,
    )


def _replay(completion: Completion, deliver) -> None:
    """A completion that did not come from the model (a middleware answered) streams as one delta."""
    if completion.thinking:
        deliver(StreamChunk(thinking=completion.thinking))
    if completion.text:
        deliver(StreamChunk(text=completion.text))
    for tool_call in completion.tool_calls:
        deliver(StreamChunk(tool_call=tool_call))


def request_summary(request: LLMRequest) -> dict:
    """What the trace keeps of a request: never the whole prompt, never a key."""
    summary = {
        "role": request.role, "model": request.model.model, "provider": request.model.provider,
        "registry_model": request.model.name, "messages": len(request.messages),
        "last_user": _clip(request.last_user_text), "stream": request.stream,
    }
    if request.tools:
        summary["tools"] = [tool.name for tool in request.tools]
    if request.response_format:
        summary["response_format"] = request.response_format.get("type")
    return summary


def response_summary(completion: Completion) -> dict:
    summary = {
        "response_model": completion.model, "provider": completion.provider,
        "input_tokens": completion.usage.input_tokens,
        "output_tokens": completion.usage.output_tokens, "cached_tokens": completion.usage.cached_tokens,
        "cost": completion.cost, "stop_reason": str(completion.stop_reason), "text": _clip(completion.text),
        "latency_ms": round(completion.latency_ms, 3), "attempts": completion.attempts,
        "request_id": completion.request_id,
    }
    if completion.thinking:
        summary["thinking"] = _clip(completion.thinking)
    if completion.tool_calls:
        summary["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": _clip(str(c.arguments), 200)}
                                 for c in completion.tool_calls]
    return summary


def _clip(text: str, limit: int = SUMMARY_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
