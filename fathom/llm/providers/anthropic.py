"""Anthropic's Messages API through the official SDK: text, tool_use blocks, extended thinking, streaming.

System messages become the `system` parameter; tool results go back as `tool_result` blocks in a
user message (consecutive ones merged, as the API wants strictly alternating turns). A JSON-schema
`response_format` is asked for the way that works on every model: a single forced tool whose input
schema is the schema, its input returned as the completion's text.

Extended thinking (the `thinking` option, `{"type": "enabled", "budget_tokens": N}`) comes back as
`thinking` blocks, read into `Completion.thinking`. Their signatures are not kept (`Message` has no
thinking to send back): Anthropic wants a signed block back only to go on thinking in a turn of tool
use, so the call that sends tool results goes without thinking (`_thinking_fitted`)."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Iterator

import anthropic

from fathom.llm.errors import LLMNotConfigured
from fathom.llm.media import image_base64
from fathom.llm.providers._sdk import cached_client, typed_error
from fathom.llm.types import Completion, StopReason, StreamChunk, ToolCall, Usage

# Options sent to the API (under Anthropic's name); those the installed SDK's create() does not take
# as parameters travel in extra_body. Anything else is not sent.
PASSED_OPTIONS = ("temperature", "top_p", "top_k", "stop", "metadata", "thinking", "service_tier", "extra_headers")
OPTION_NAMES = {"stop": "stop_sequences"}
STOP_REASONS = {"end_turn": StopReason.END, "tool_use": StopReason.TOOL_CALLS, "max_tokens": StopReason.MAX_TOKENS,
                "stop_sequence": StopReason.STOP_SEQUENCE, "refusal": StopReason.REFUSAL}
SCHEMA_TOOL = "respond_with_json"
# Tokens of thinking per level (THINKING_LEVELS); Anthropic's least is 1024.
THINKING_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384}
# Options Anthropic refuses while thinking is on (it samples at its own temperature).
NOT_WITH_THINKING = ("temperature", "top_k")


class AnthropicProvider:
    name = "anthropic"

    def thinking_options(self, level: str) -> dict:
        return {"thinking": {"type": "enabled", "budget_tokens": THINKING_BUDGETS[level]}}

    def complete(self, request, *, timeout: float) -> Completion:
        params = self.params(request)
        try:
            raw = self._client(request).messages.with_raw_response.create(**params, timeout=timeout)
            response = raw.parse()
        except anthropic.APIError as exc:
            raise typed_error(exc, anthropic, request) from exc
        text = "".join(block.text for block in response.content if block.type == "text")
        thinking = "".join(block.thinking for block in response.content if block.type == "thinking")
        calls = tuple(ToolCall(block.id, block.name, dict(block.input or {}))
                      for block in response.content if block.type == "tool_use")
        return self._completion(request, text, calls, response.stop_reason, _usage(response.usage),
                                raw.headers.get("request-id") or response.id, response.model, thinking)

    def stream(self, request, *, timeout: float) -> Iterator[StreamChunk]:
        params = self.params(request)
        as_json = SCHEMA_TOOL in {t["name"] for t in params.get("tools", ())} and "tool_choice" in params
        try:
            raw = self._client(request).messages.with_raw_response.create(**params, stream=True, timeout=timeout)
            events = raw.parse()
        except anthropic.APIError as exc:
            raise typed_error(exc, anthropic, request) from exc
        request_id = raw.headers.get("request-id")
        text, thinking, calls, blocks, stop = [], [], [], {}, None
        usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        try:
            for event in events:
                if event.type == "message_start":
                    request_id = request_id or event.message.id
                    _add_usage(usage, event.message.usage)
                elif event.type == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks[event.index] = {"id": block.id, "name": block.name, "json": ""}
                elif event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        text.append(delta.text)
                        yield StreamChunk(text=delta.text)
                    elif delta.type == "thinking_delta":
                        thinking.append(delta.thinking)
                        yield StreamChunk(thinking=delta.thinking)
                    elif delta.type == "input_json_delta" and event.index in blocks:
                        blocks[event.index]["json"] += delta.partial_json
                elif event.type == "content_block_stop" and event.index in blocks:
                    block = blocks.pop(event.index)
                    call = ToolCall(block["id"], block["name"], json.loads(block["json"]) if block["json"] else {})
                    calls.append(call)
                    if not as_json:
                        yield StreamChunk(tool_call=call)
                elif event.type == "message_delta":
                    stop = event.delta.stop_reason or stop
                    if event.usage is not None:
                        _add_usage(usage, event.usage, final=True)
        except anthropic.APIError as exc:
            raise typed_error(exc, anthropic, request) from exc
        if as_json and calls:
            yield StreamChunk(text=json.dumps(calls[0].arguments))
        yield StreamChunk(completion=self._completion(
            request, "".join(text), tuple(calls), stop,
            Usage(input_tokens=usage["input"] + usage["cache_read"] + usage["cache_write"],
                  output_tokens=usage["output"], cached_tokens=usage["cache_read"]),
            request_id, request.model.model, "".join(thinking)))

    # --- request and response ----------------------------------------------------------------------------

    def params(self, request) -> dict:
        options = dict(request.options)
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        params = {"model": request.model.model,
                  "max_tokens": options.get("max_tokens") or request.model.max_output_tokens,
                  "messages": self.messages(request)}
        tools = [{"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                 for t in request.tools or ()]
        response_format = request.response_format or {}
        if response_format.get("type") == "json_schema":
            inner = response_format.get("json_schema") or {}
            schema = inner.get("schema") or response_format.get("schema") or {"type": "object"}
            tools.append({"name": SCHEMA_TOOL, "description": "Give your answer as this JSON object.",
                          "input_schema": schema})
            options["tool_choice"] = {"type": "tool", "name": SCHEMA_TOOL}
        elif response_format.get("type") == "json_object":
            system = (system + "\n\n" if system else "") + "Answer with one JSON object and nothing else."
        if system:
            params["system"] = system
        if tools:
            params["tools"] = tools
        if "tool_choice" in options:
            params["tool_choice"] = _tool_choice(options.pop("tool_choice"))
        _thinking_fitted(request, options, params)
        extra = dict(options.pop("extra_body", None) or {})
        accepted = _create_parameters()
        for name, value in options.items():
            if name not in PASSED_OPTIONS:
                continue
            name = OPTION_NAMES.get(name, name)
            if name in accepted:
                params[name] = value
            else:
                extra[name] = value  # e.g. temperature, top_p, top_k on SDKs that dropped them
        if extra:
            params["extra_body"] = extra
        return params

    def messages(self, request) -> list[dict]:
        turns: list[dict] = []
        for message in request.messages:
            if message.role == "system":
                continue
            if message.role == "tool":
                role, blocks = "user", [{"type": "tool_result", "tool_use_id": message.tool_call_id,
                                         "content": message.content}]
            elif message.role == "assistant":
                role = "assistant"
                blocks = [{"type": "text", "text": message.content}] if message.content else []
                blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                           for c in message.tool_calls]
            else:
                role = "user"
                blocks = []
                for image in message.images:
                    data, media_type = image_base64(request.workspace_id, image)
                    blocks.append({"type": "image", "source": {"type": "base64", "media_type": media_type,
                                                               "data": data}})
                if message.content or not blocks:
                    blocks.append({"type": "text", "text": message.content})
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": role, "content": blocks})
        return turns

    def _completion(self, request, text, calls, stop, usage, request_id, model, thinking="") -> Completion:
        stop_reason = STOP_REASONS.get(stop or "end_turn", StopReason.OTHER)
        if calls and calls[0].name == SCHEMA_TOOL and (request.response_format or {}).get("type") == "json_schema":
            text, calls, stop_reason = json.dumps(calls[0].arguments), (), StopReason.END
        return Completion(text=text, tool_calls=calls, stop_reason=stop_reason, usage=usage,
                          model=model or request.model.model, provider=self.name, request_id=request_id,
                          thinking=thinking)

    def _client(self, request):
        model = request.model
        if not model.api_key:
            raise LLMNotConfigured(f"no API key for the model {model.name!r}: set one on the model (ANTHROPIC_API_KEY "
                                   f"serves only deployment-wide models set to use it)", provider=self.name, model=model.model)
        return cached_client(anthropic.Anthropic, kind=self.name, base_url=model.base_url, api_key=model.api_key,
                             timeout=model.timeout_seconds)


def _thinking_fitted(request, options: dict, params: dict) -> None:
    """The thinking option as Anthropic accepts it. Its budget is part of max_tokens, which must exceed
    it: the answer keeps its own limit on top. Anthropic refuses thinking with a forced tool (a JSON
    schema's answer) and, once a turn of tool use goes on, without that turn's signed thinking block
    (not kept here): those calls go without thinking."""
    thinking = options.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return
    forced = (params.get("tool_choice") or {}).get("type") in ("any", "tool")
    if forced or _continues_tool_use(request.messages):
        del options["thinking"]
        return
    budget = int(thinking.get("budget_tokens") or 0)
    if params["max_tokens"] <= budget:
        params["max_tokens"] += budget
    for name in NOT_WITH_THINKING:
        options.pop(name, None)


def _continues_tool_use(messages) -> bool:
    """Whether the last assistant message called tools whose results follow it."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            return bool(messages[index].tool_calls) and any(m.role == "tool" for m in messages[index + 1:])
    return False


def _tool_choice(choice):
    """OpenAI's tool_choice words to Anthropic's."""
    if isinstance(choice, dict):
        if choice.get("type") == "function":
            return {"type": "tool", "name": choice["function"]["name"]}
        return choice
    return {"auto": {"type": "auto"}, "required": {"type": "any"}, "any": {"type": "any"},
            "none": {"type": "none"}}.get(choice, {"type": "auto"})


def _usage(usage) -> Usage:
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    return Usage(input_tokens=(usage.input_tokens or 0) + read + written, output_tokens=usage.output_tokens or 0,
                 cached_tokens=read)


def _add_usage(total: dict, usage, final: bool = False) -> None:
    if usage is None:
        return
    # message_delta's usage is cumulative: it replaces, never adds.
    if getattr(usage, "input_tokens", None):
        total["input"] = usage.input_tokens
    if getattr(usage, "output_tokens", None):
        total["output"] = usage.output_tokens
    if getattr(usage, "cache_read_input_tokens", None):
        total["cache_read"] = usage.cache_read_input_tokens
    if getattr(usage, "cache_creation_input_tokens", None):
        total["cache_write"] = usage.cache_creation_input_tokens


@functools.cache
def _create_parameters() -> frozenset:
    return frozenset(inspect.signature(anthropic.resources.Messages.create).parameters)
