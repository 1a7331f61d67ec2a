"""OpenAI's Chat Completions through the official SDK: text, tools, JSON-schema output, streaming
with usage. `openai-compatible` is the same protocol at another base URL (Ollama's /v1, vLLM,
llama.cpp's server), where the key is optional and `max_tokens` is the limit's name. A model whose
registry row says `api = responses` goes through the Responses API instead
(`fathom.llm.providers.openai_responses`).

Thinking is asked for with `reasoning_effort`; an OpenAI-compatible server that shows it (vLLM,
DeepSeek, Ollama's own /v1) sends it as the message's `reasoning_content` or `reasoning`, whole and in
stream deltas, read into `Completion.thinking`. OpenAI's own chat completions keep it hidden."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai

from fathom.llm.errors import LLMNotConfigured, LLMServerError
from fathom.llm.media import image_base64
from fathom.llm.models import OpenAIApi
from fathom.llm.providers import openai_responses
from fathom.llm.providers._sdk import cached_client, parse_arguments, typed_error
from fathom.llm.types import Completion, Embeddings, StopReason, StreamChunk, ToolCall, Usage

# Options passed through to the API as they are; anything else is not sent.
PASSED_OPTIONS = ("temperature", "top_p", "stop", "seed", "tool_choice", "parallel_tool_calls", "frequency_penalty",
                  "presence_penalty", "user", "reasoning_effort", "logit_bias", "n", "extra_body", "extra_headers",
                  "service_tier", "metadata", "store", "prompt_cache_key")
RESPONSES = OpenAIApi.RESPONSES.value
STOP_REASONS = {"stop": StopReason.END, "tool_calls": StopReason.TOOL_CALLS, "function_call": StopReason.TOOL_CALLS,
                "length": StopReason.MAX_TOKENS, "content_filter": StopReason.CONTENT_FILTER}


class OpenAIProvider:
    name = "openai"
    key_required = True
    max_tokens_name = "max_completion_tokens"

    def thinking_options(self, level: str) -> dict:
        return {"reasoning_effort": level}

    def complete(self, request, *, timeout: float) -> Completion:
        if request.model.api == RESPONSES:
            return openai_responses.complete(self._client(request), request, timeout=timeout, provider=self.name)
        try:
            raw = self._client(request).chat.completions.with_raw_response.create(
                **self.params(request), timeout=timeout)
            response = raw.parse()
        except openai.APIError as exc:
            raise typed_error(exc, openai, request) from exc
        return self._completion(request, response, raw.headers.get("x-request-id"))

    def stream(self, request, *, timeout: float) -> Iterator[StreamChunk]:
        if request.model.api == RESPONSES:
            return openai_responses.stream(self._client(request), request, timeout=timeout, provider=self.name)
        return self._chat_stream(request, timeout=timeout)

    def embed(self, request, texts: list[str], *, timeout: float) -> Embeddings:
        """The model's embeddings of `texts` (/v1/embeddings, as floats)."""
        try:
            response = self._client(request).embeddings.create(model=request.model.model, input=texts,
                                                               encoding_format="float", timeout=timeout)
        except openai.APIError as exc:
            raise typed_error(exc, openai, request) from exc
        vectors = [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
        if len(vectors) != len(texts):
            raise LLMServerError(f"{self.name} answered {len(vectors)} embeddings for {len(texts)} texts",
                                 provider=self.name, model=request.model.model)
        tokens = response.usage.prompt_tokens if response.usage is not None else 0
        return Embeddings(vectors, Usage(input_tokens=tokens or 0), model=response.model or request.model.model,
                          provider=self.name)

    def _chat_stream(self, request, *, timeout: float) -> Iterator[StreamChunk]:
        try:
            raw = self._client(request).chat.completions.with_raw_response.create(
                **self.params(request), stream=True, stream_options={"include_usage": True}, timeout=timeout)
            chunks = raw.parse()
        except openai.APIError as exc:
            raise typed_error(exc, openai, request) from exc
        request_id = raw.headers.get("x-request-id")
        text, thinking, calls, stop, usage = [], [], {}, None, Usage()
        try:
            for chunk in chunks:
                if chunk.usage is not None:
                    usage = _usage(chunk.usage)
                request_id = request_id or chunk.id
                for choice in chunk.choices[:1]:
                    delta = choice.delta
                    thought = _reasoning(delta)
                    if thought:
                        thinking.append(thought)
                        yield StreamChunk(thinking=thought)
                    if delta is not None and delta.content:
                        text.append(delta.content)
                        yield StreamChunk(text=delta.content)
                    for part in (delta.tool_calls if delta is not None else None) or ():
                        call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                        if part.id:
                            call["id"] = part.id
                        if part.function is not None:
                            call["name"] += part.function.name or ""
                            call["arguments"] += part.function.arguments or ""
                    if choice.finish_reason:
                        stop = choice.finish_reason
        except openai.APIError as exc:
            raise typed_error(exc, openai, request) from exc
        tool_calls = tuple(ToolCall(c["id"], c["name"], parse_arguments(c["arguments"]))
                           for _, c in sorted(calls.items()))
        for call in tool_calls:
            yield StreamChunk(tool_call=call)
        yield StreamChunk(completion=Completion(
            text="".join(text), tool_calls=tool_calls, stop_reason=STOP_REASONS.get(stop or "stop", StopReason.OTHER),
            usage=usage, model=request.model.model, provider=self.name, request_id=request_id,
            thinking="".join(thinking)))

    # --- request and response ----------------------------------------------------------------------------

    def params(self, request) -> dict:
        options = request.options
        params = {"model": request.model.model, "messages": [self.message(request, m) for m in request.messages]}
        if request.tools:
            params["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": dict(t.parameters)}} for t in request.tools]
        if request.response_format:
            params["response_format"] = request.response_format
        params[self.max_tokens_name] = options.get("max_tokens") or request.model.max_output_tokens
        for name in PASSED_OPTIONS:
            if name in options:
                params[name] = options[name]
        return params

    def message(self, request, message) -> dict:
        if message.role == "tool":
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
        if message.role == "assistant":
            data = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                data["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": json.dumps(c.arguments)}} for c in message.tool_calls]
            return data
        if message.images:
            parts = [{"type": "text", "text": message.content}] if message.content else []
            for image in message.images:
                data, media_type = image_base64(request.workspace_id, image)
                parts.append({"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{data}"}})
            return {"role": message.role, "content": parts}
        return {"role": message.role, "content": message.content}

    def _completion(self, request, response, request_id) -> Completion:
        choice = response.choices[0]
        message = choice.message
        tool_calls = tuple(ToolCall(c.id, c.function.name, parse_arguments(c.function.arguments))
                           for c in message.tool_calls or () if getattr(c, "function", None) is not None)
        stop = STOP_REASONS.get(choice.finish_reason or "stop", StopReason.OTHER)
        text = message.content or ""
        if getattr(message, "refusal", None):
            text, stop = message.refusal, StopReason.REFUSAL
        return Completion(text=text, tool_calls=tool_calls, stop_reason=stop, usage=_usage(response.usage),
                          model=response.model or request.model.model, provider=self.name,
                          request_id=request_id or response.id, thinking=_reasoning(message))

    def _client(self, request):
        model = request.model
        if self.key_required and not model.api_key:
            raise LLMNotConfigured(f"no API key for the model {model.name!r}: set one on the model (OPENAI_API_KEY "
                                   f"serves only deployment-wide models set to use it)", provider=self.name, model=model.model)
        return cached_client(openai.OpenAI, kind=self.name, base_url=model.base_url,
                             api_key=model.api_key or "not-needed", timeout=model.timeout_seconds)


class OpenAICompatibleProvider(OpenAIProvider):
    name = "openai-compatible"
    key_required = False
    max_tokens_name = "max_tokens"

    def _client(self, request):
        if not request.model.base_url:
            raise LLMNotConfigured(f"the model {request.model.name!r} needs a base URL (or OLLAMA_HOST)",
                                   provider=self.name, model=request.model.model)
        return super()._client(request)


def _reasoning(message) -> str:
    """The thinking an OpenAI-compatible server sent beside a message or delta (fields the SDK's types
    do not declare, kept as extras)."""
    thought = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    return thought if isinstance(thought, str) else ""


def _usage(usage) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(input_tokens=usage.prompt_tokens or 0, output_tokens=usage.completion_tokens or 0,
                 cached_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0)
