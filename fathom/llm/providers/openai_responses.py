"""OpenAI's Responses API (/v1/responses, seed 003's choice) through the official SDK, for models whose
registry row says `api = responses`: the same messages, tools, JSON output and usage as Chat
Completions, in the Responses shapes.

Messages become input items: system, user and assistant text as role messages, an assistant's tool
calls as `function_call` items and tool results as `function_call_output` items (joined by
`call_id`). A chat-style `response_format` becomes `text.format`. The call is stateless
(`store` is false unless the options say otherwise): the whole conversation goes every time, as
with Chat Completions."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai

from fathom.llm.media import image_base64
from fathom.llm.providers._sdk import parse_arguments, typed_error
from fathom.llm.types import Completion, StopReason, StreamChunk, ToolCall, Usage

# Options passed through under the same name; anything else is not sent (`seed` and `stop` have no
# Responses equivalent).
PASSED_OPTIONS = ("temperature", "top_p", "parallel_tool_calls", "user", "metadata", "store", "service_tier",
                  "extra_body", "extra_headers", "prompt_cache_key", "truncation")
INCOMPLETE_REASONS = {"max_output_tokens": StopReason.MAX_TOKENS, "content_filter": StopReason.CONTENT_FILTER}


def complete(client, request, *, timeout: float, provider: str) -> Completion:
    try:
        raw = client.responses.with_raw_response.create(**params(request), timeout=timeout)
        response = raw.parse()
    except openai.APIError as exc:
        raise typed_error(exc, openai, request) from exc
    return _completion(request, response, raw.headers.get("x-request-id") or response.id, provider)


def stream(client, request, *, timeout: float, provider: str) -> Iterator[StreamChunk]:
    """Text deltas as `response.output_text.delta` brings them, each function call once its item is
    done, then the completion built from `response.completed` (which carries the usage)."""
    try:
        raw = client.responses.with_raw_response.create(**params(request), stream=True, timeout=timeout)
        events = raw.parse()
    except openai.APIError as exc:
        raise typed_error(exc, openai, request) from exc
    request_id = raw.headers.get("x-request-id")
    final = None
    try:
        for event in events:
            kind = event.type
            if kind == "response.output_text.delta" and event.delta:
                yield StreamChunk(text=event.delta)
            elif kind == "response.output_item.done" and event.item.type == "function_call":
                yield StreamChunk(tool_call=_tool_call(event.item))
            elif kind in ("response.completed", "response.incomplete"):
                final = event.response
            elif kind == "response.failed":
                error = getattr(event.response, "error", None)
                raise openai.APIError(f"the response failed: {getattr(error, 'message', error)}",
                                      request=raw.http_response.request, body=None)
            elif kind == "error":
                raise openai.APIError(f"the stream reported an error: {event.message}",
                                      request=raw.http_response.request, body=None)
    except openai.APIError as exc:
        raise typed_error(exc, openai, request) from exc
    if final is None:
        raise typed_error(openai.APIError("the stream ended without response.completed",
                                          request=raw.http_response.request, body=None), openai, request)
    yield StreamChunk(completion=_completion(request, final, request_id or final.id, provider))


# --- request and response ----------------------------------------------------------------------------------

def params(request) -> dict:
    options = request.options
    params = {"model": request.model.model, "input": [item for m in request.messages for item in _items(request, m)],
              "max_output_tokens": options.get("max_tokens") or request.model.max_output_tokens, "store": False}
    if request.tools:
        params["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                            "parameters": dict(t.parameters), "strict": False} for t in request.tools]
    if request.response_format:
        params["text"] = {"format": _text_format(request.response_format)}
    if "tool_choice" in options:
        params["tool_choice"] = _tool_choice(options["tool_choice"])
    if options.get("reasoning_effort"):
        params["reasoning"] = {"effort": options["reasoning_effort"]}
    for name in PASSED_OPTIONS:
        if name in options:
            params[name] = options[name]
    return params


def _items(request, message) -> list[dict]:
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content}]
    if message.role == "assistant":
        items = [{"role": "assistant", "content": message.content}] if message.content else []
        items += [{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": json.dumps(c.arguments)}
                  for c in message.tool_calls]
        return items
    if message.images:
        parts = [{"type": "input_text", "text": message.content}] if message.content else []
        for image in message.images:
            data, media_type = image_base64(request.workspace_id, image)
            parts.append({"type": "input_image", "image_url": f"data:{media_type};base64,{data}"})
        return [{"role": message.role, "content": parts}]
    return [{"role": message.role, "content": message.content}]


def _text_format(response_format: dict) -> dict:
    if response_format.get("type") == "json_schema":
        inner = response_format.get("json_schema") or {}
        fmt = {"type": "json_schema", "name": inner.get("name") or "answer",
               "schema": inner.get("schema") or response_format.get("schema") or {"type": "object"}}
        if "strict" in inner:
            fmt["strict"] = inner["strict"]
        return fmt
    return {"type": response_format.get("type") or "text"}


def _tool_choice(choice):
    """Chat Completions' tool_choice words to the Responses API's."""
    if isinstance(choice, dict) and choice.get("type") == "function" and "function" in choice:
        return {"type": "function", "name": choice["function"]["name"]}
    return choice


def _completion(request, response, request_id, provider: str) -> Completion:
    text, calls, refusal = [], [], ""
    for item in response.output or ():
        if item.type == "message":
            for part in item.content or ():
                if part.type == "output_text":
                    text.append(part.text)
                elif part.type == "refusal":
                    refusal = part.refusal
        elif item.type == "function_call":
            calls.append(_tool_call(item))
    stop = StopReason.TOOL_CALLS if calls else StopReason.END
    if response.status == "incomplete":
        reason = getattr(response.incomplete_details, "reason", None)
        stop = INCOMPLETE_REASONS.get(reason, StopReason.OTHER)
    answer = "".join(text)
    if refusal and not answer:
        answer, stop = refusal, StopReason.REFUSAL
    return Completion(text=answer, tool_calls=tuple(calls), stop_reason=stop, usage=_usage(response.usage),
                      model=response.model or request.model.model, provider=provider, request_id=request_id)


def _tool_call(item) -> ToolCall:
    return ToolCall(item.call_id, item.name, parse_arguments(item.arguments))


def _usage(usage) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "input_tokens_details", None)
    return Usage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0,
                 cached_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0)
