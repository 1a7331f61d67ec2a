"""Ollama's and OpenAI's wire shapes, as the proxy speaks them: messages in (to the project's
`Message`s for the model middleware and registry models), chunks and answers out (Ollama's NDJSON
objects, OpenAI's chat completion chunks), embeddings requests and answers of both APIs, and errors
in each API's own shape and status codes."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import secrets
import struct
import time
from datetime import UTC, datetime

from fathom.api.parsers import MAX_JSON_DEPTH, nested_too_deep
from fathom.api.text import REASON, unstorable_in_json
from fathom.llm.providers import THINKING_LEVELS
from fathom.llm.types import Completion, Message, StopReason, ToolCall, ToolSpec

# What /api/version answers when no Ollama stands behind the proxy: the Ollama API version it speaks.
OLLAMA_API_VERSION = "0.12.6"
LOOP_DONE_REASON = "loop"

_NUMBER = (int, float)
_JSON_TYPES = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array",
               dict: "an object"}
# The fields of Ollama's requests the proxy reads or forwards, by type (tools, format and think have
# their own checks); other fields pass through to an Ollama upstream as they came.
_OLLAMA_FIELDS = {"model": str, "stream": bool, "raw": bool, "prompt": str, "system": str, "suffix": str,
                  "template": str, "keep_alive": (str, *_NUMBER), "messages": list, "images": list,
                  "context": list, "options": dict, "truncate": bool, "shift": bool}
_MESSAGE_FIELDS = {"role": str, "content": str, "thinking": str, "images": list, "tool_calls": list,
                   "tool_name": str, "tool_call_id": str}
_OPTION_FIELDS = {"temperature": _NUMBER, "top_p": _NUMBER, "min_p": _NUMBER, "typical_p": _NUMBER,
                  "repeat_penalty": _NUMBER, "presence_penalty": _NUMBER, "frequency_penalty": _NUMBER,
                  "top_k": int, "seed": int, "num_predict": int, "num_ctx": int, "num_keep": int,
                  "repeat_last_n": int, "num_batch": int, "num_gpu": int, "num_thread": int, "stop": (str, list)}
_ENVELOPE_CODES = {400: "invalid", 401: "not_authenticated", 403: "permission_denied", 404: "not_found",
                   405: "method_not_allowed", 413: "too_large", 429: "throttled", 500: "error", 502: "upstream_error",
                   503: "unavailable"}

_DONE_REASONS = {StopReason.MAX_TOKENS: "length"}
_FINISH_REASONS = {StopReason.MAX_TOKENS: "length", StopReason.TOOL_CALLS: "tool_calls",
                   StopReason.CONTENT_FILTER: "content_filter"}


class WireError(Exception):
    """A request the proxy answers with an error, in the API's own shape: Ollama's
    `{"error": "..."}`, OpenAI's `{"error": {"message", "type", "code"}}`."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param  # OpenAI's shape only: the request field at fault, and a code for it
        self.code = code


class OpenAIError(WireError):
    """A WireError answered in OpenAI's error shape (whatever the path)."""


def model_not_found(name: str) -> WireError:
    return WireError(404, f'model "{name}" not found, try pulling it first')


def created_at() -> str:
    """Ollama's timestamp: RFC 3339 in UTC with microseconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ndjson(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def json_body(raw: bytes) -> dict:
    """The request's JSON object, or a 400 in Ollama's words: held to the API's rules (UTF-8, nested at
    most MAX_JSON_DEPTH deep, no NaN, no text PostgreSQL cannot store: fathom.api.text)."""
    if not raw:
        raise WireError(400, "missing request body")
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        raise WireError(400, f"invalid JSON: the body is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if nested_too_deep(text):
        raise WireError(400, f"invalid JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        body = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise WireError(400, f"invalid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise WireError(400, "json: cannot unmarshal request: the body must be a JSON object")
    if (where := unstorable_in_json(text, body)) is not None:
        raise WireError(400, f"invalid text at {where}: it {REASON}")
    return body


def ollama_request_check(body: dict) -> None:
    """An /api/chat or /api/generate body's fields of the types Ollama takes, or a 400 in its words
    naming the first that is not (null is absent, as in Ollama)."""
    _typed(body, _OLLAMA_FIELDS, "")
    for index, message in enumerate(chat_messages(body)):
        _typed(message, _MESSAGE_FIELDS, f"messages[{index}].")
        _each(message.get("images"), str, f"messages[{index}].images")
        for number, call in enumerate(message.get("tool_calls") or ()):
            _function_call(call, f"messages[{index}].tool_calls[{number}]")
    _each(body.get("images"), str, "images")
    _each(body.get("context"), int, "context")
    options = options_of(body)
    _typed(options, _OPTION_FIELDS, "options.")
    stop = options.get("stop")
    if isinstance(stop, list):
        _each(stop, str, "options.stop")
    to_tool_specs(body.get("tools"))
    to_response_format(body.get("format"))
    think_level(body)


def envelope_error(exc: WireError, *, openai: bool) -> dict:
    """The API's error envelope (the main port's mount); on OpenAI's routes it carries OpenAI's `type`
    and `param` too, so that OpenAI's clients read it as their own."""
    error = {"code": exc.code or _ENVELOPE_CODES.get(exc.status, "error"), "message": exc.message,
             "details": {"param": exc.param} if exc.param else {}}
    if openai:
        error.update(type=openai_error(exc.status, exc.message)["error"]["type"], param=exc.param)
    return {"error": error}


def model_name(body: dict) -> str:
    name = body.get("model")
    if name is None or name == "":
        raise WireError(400, "model is required")
    if not isinstance(name, str):
        raise WireError(400, "json: cannot unmarshal model: it must be a string")
    return name


def chat_messages(body: dict) -> list[dict]:
    messages = body.get("messages")
    if messages is None:
        return []
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise WireError(400, "json: cannot unmarshal messages: it must be a list of objects")
    for message in messages:
        if not isinstance(message.get("role", ""), str) or not isinstance(message.get("content", ""), str | None):
            raise WireError(400, "json: cannot unmarshal message: role and content must be strings")
    return messages


def generate_messages(body: dict) -> list[dict]:
    """An /api/generate body's prompt and system as chat messages (none for an empty prompt: Ollama
    loads the model and answers done)."""
    prompt, system = body.get("prompt") or "", body.get("system") or ""
    if not isinstance(prompt, str) or not isinstance(system, str):
        raise WireError(400, "json: cannot unmarshal prompt: it must be a string")
    return ([{"role": "system", "content": system}] if system else []) + (
        [{"role": "user", "content": prompt}] if prompt else [])


def think_level(body: dict) -> str | None:
    """Ollama's `think` as the level a registry model is asked to think at (THINKING_LEVELS), None for
    no thinking; a bad value is a 400 in Ollama's words. `true` is "medium"; "max" (from OpenAI's
    highest reasoning efforts) is "high"."""
    think = body.get("think")
    if think is None or think is False:
        return None
    if think is True:
        return "medium"
    if isinstance(think, str):
        if think == "max":
            return "high"
        if think in THINKING_LEVELS:
            return think
        raise WireError(400, f'invalid think value: {json.dumps(think)} (must be "high", "medium", "low", true, or false)')
    raise WireError(400, 'think must be a boolean or string ("high", "medium", "low", true, or false)')


def cannot_think(name: str) -> WireError:
    """Ollama's answer to `think` for a model without thinking."""
    return WireError(400, f"{json.dumps(name, ensure_ascii=False)} does not support thinking")


def options_of(body: dict) -> dict:
    options = body.get("options")
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise WireError(400, "json: cannot unmarshal options: it must be an object")
    return options


def _typed(obj: dict, fields: dict, where: str) -> None:
    for name, expected in fields.items():
        value = obj.get(name)
        if value is not None and not _is(value, expected):
            raise WireError(400, f"json: cannot unmarshal {where}{name}: it must be {_named(expected)}, not "
                                 f"{_json_type(value)}", param=name, code="invalid_type")


def _each(values, expected, where: str) -> None:
    for index, value in enumerate(values or ()):
        if not _is(value, expected):
            raise WireError(400, f"json: cannot unmarshal {where}[{index}]: it must be {_named(expected)}, not "
                                 f"{_json_type(value)}", code="invalid_type")


def _function_call(call, where: str) -> None:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not _is(
            function.get("arguments", {}), (dict, str)) or not _is(call.get("id") or "", str):
        raise WireError(400, f"json: cannot unmarshal {where}: it must be an object with a function "
                             f"(name, arguments)", code="invalid_type")


def _is(value, expected) -> bool:
    """isinstance, where a boolean is not a number (as in JSON)."""
    expected = expected if isinstance(expected, tuple) else (expected,)
    return isinstance(value, expected) and (bool in expected or not isinstance(value, bool))


def _named(expected) -> str:
    return " or ".join(_JSON_TYPES[kind] for kind in (expected if isinstance(expected, tuple) else (expected,)))


def _no_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


# --- Ollama messages <-> the project's ---------------------------------------------------------------------

def to_messages(raw_messages: list[dict], *, store_image=None) -> list[Message]:
    """The conversation as `Message`s: text, roles and tool calls; images only with `store_image`
    (base64 data -> media hash), else they stay in the raw messages alone."""
    messages, pending_ids = [], []
    for index, raw in enumerate(raw_messages):
        role = raw.get("role") or "user"
        if role not in ("system", "user", "assistant", "tool"):
            role = "user"
        content = raw.get("content") or ""
        if role == "tool":
            call_id = raw.get("tool_call_id") or (pending_ids.pop(0) if pending_ids else None) \
                or raw.get("tool_name") or f"call_{index}"
            messages.append(Message("tool", content, tool_call_id=call_id, name=raw.get("tool_name")))
            continue
        calls = tuple(_tool_call(call, index, n) for n, call in enumerate(raw.get("tool_calls") or ()))
        pending_ids = [call.id for call in calls]
        images = tuple(store_image(image) for image in raw.get("images") or ()) if store_image else ()
        messages.append(Message(role, content, tool_calls=calls, images=images))
    return messages


def image_bytes(image) -> bytes:
    """An Ollama image (base64, or a data URL) as bytes, or a 400."""
    if not isinstance(image, str) or not image:
        raise WireError(400, "invalid image: images must be base64 strings")
    if image.startswith("data:") and "," in image:
        image = image.split(",", 1)[1]
    try:
        return base64.b64decode(image, validate=True)
    except ValueError:
        raise WireError(400, "invalid image: not base64") from None


def to_tool_specs(tools) -> list[ToolSpec] | None:
    if not tools:
        return None
    if not isinstance(tools, list):
        raise WireError(400, "json: cannot unmarshal tools: it must be a list")
    specs = []
    for tool in tools:
        function = (tool or {}).get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise WireError(400, "json: cannot unmarshal tool: each needs function.name")
        if not _is(function.get("parameters") or {}, dict) or not _is(function.get("description") or "", str):
            raise WireError(400, "json: cannot unmarshal tool: its parameters must be an object, its description a string")
        specs.append(ToolSpec(function["name"], function.get("description") or "",
                              function.get("parameters") or {"type": "object", "properties": {}}))
    return specs


def to_response_format(fmt) -> dict | None:
    """Ollama's `format` ("json" or a JSON schema) as a `complete` response_format."""
    if fmt in (None, ""):
        return None
    if fmt == "json":
        return {"type": "json_object"}
    if isinstance(fmt, dict):
        return {"type": "json_schema", "json_schema": {"name": "response", "schema": fmt}}
    raise WireError(400, f"invalid format: {json.dumps(fmt)[:100]} (\"json\" or a JSON schema)")


def message_dict(message: Message) -> dict:
    """A `Message` the middleware added, as an Ollama message."""
    data = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [ollama_tool_call(call) for call in message.tool_calls]
    return data


def ollama_tool_call(call: ToolCall) -> dict:
    return {"function": {"name": call.name, "arguments": call.arguments}}


def tool_call_of(raw: dict) -> ToolCall | None:
    """A tool call of an Ollama reply (for the loop guard)."""
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict):
        return None
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = {"raw": arguments}
    return ToolCall(raw.get("id") or "", str(function.get("name") or ""),
                    arguments if isinstance(arguments, dict) else {})


def _tool_call(raw, index: int, n: int) -> ToolCall:
    call = tool_call_of(raw) if isinstance(raw, dict) else None
    if call is None:
        return ToolCall(f"call_{index}_{n}", "unknown")
    return ToolCall(call.id or f"call_{index}_{n}", call.name, call.arguments)


# --- answers from a registry model, in Ollama's shape -------------------------------------------------------

def done_reason(completion: Completion) -> str:
    return _DONE_REASONS.get(completion.stop_reason, "stop")


def stats(completion: Completion, started: float) -> dict:
    """Ollama's closing numbers: durations in nanoseconds, prompt and eval counts in tokens."""
    total = int((time.perf_counter() - started) * 1e9)
    return {"total_duration": total, "load_duration": 0,
            "prompt_eval_count": completion.usage.input_tokens, "prompt_eval_duration": 0,
            "eval_count": completion.usage.output_tokens, "eval_duration": int(completion.latency_ms * 1e6)}


def chat_chunk(model: str, *, content: str = "", tool_calls=(), thinking: str = "") -> dict:
    message = {"role": "assistant", "content": content}
    if thinking:
        message["thinking"] = thinking
    if tool_calls:
        message["tool_calls"] = [ollama_tool_call(call) for call in tool_calls]
    return {"model": model, "created_at": created_at(), "message": message, "done": False}


def chat_done(model: str, completion: Completion, started: float, *, content: str = "", tool_calls=(),
              thinking: str = "", reason: str | None = None) -> dict:
    chunk = chat_chunk(model, content=content, tool_calls=tool_calls, thinking=thinking)
    chunk.update(done=True, done_reason=reason or done_reason(completion), **stats(completion, started))
    return chunk


def generate_chunk(model: str, text: str, thinking: str = "") -> dict:
    chunk = {"model": model, "created_at": created_at(), "response": text, "done": False}
    if thinking:
        chunk["thinking"] = thinking
    return chunk


def generate_done(model: str, completion: Completion, started: float, *, text: str = "", thinking: str = "",
                  reason: str | None = None) -> dict:
    chunk = generate_chunk(model, text, thinking)
    chunk.update(done=True, done_reason=reason or done_reason(completion), context=[],
                 **stats(completion, started))
    return chunk


def model_entry(name: str, *, family: str, modified: str | None = None) -> dict:
    """A model of /api/tags that no Ollama holds (a registry model): no size, a stable digest."""
    return {"name": name, "model": name, "modified_at": modified or "1970-01-01T00:00:00Z", "size": 0,
            "digest": hashlib.sha256(name.encode()).hexdigest(),
            "details": {"parent_model": "", "format": "remote", "family": family, "families": [family],
                        "parameter_size": "", "quantization_level": ""}}


def show_entry(name: str, *, family: str, thinking: bool = False) -> dict:
    entry = model_entry(name, family=family)
    return {"license": "", "modelfile": f"# {name}: served by Fathom's model registry\nFROM {name}\n",
            "parameters": "", "template": "{{ .Prompt }}", "details": entry["details"],
            "model_info": {"general.architecture": family},
            "capabilities": ["completion", "tools", *(["thinking"] if thinking else [])],
            "modified_at": entry["modified_at"]}


# --- OpenAI's chat completions ------------------------------------------------------------------------------

# The most choices (`n`) one chat completion may ask for: the proxy makes one upstream call per choice.
MAX_CHOICES = 8
# OpenAI's reasoning effort as Ollama's `think`, as Ollama's own /v1 maps it (the tiers past Ollama's
# ends are clamped to its nearest).
_THINK = {"none": False, "minimal": "low", "low": "low", "medium": "medium", "high": "high", "max": "max",
          "xhigh": "max", "ultra": "max"}


# The fields of OpenAI's chat completion request the proxy reads, by type (`n` and the reasoning effort
# have their own checks).
_OPENAI_FIELDS = {"model": str, "messages": list, "stream": bool, "temperature": _NUMBER, "top_p": _NUMBER,
                  "seed": int, "max_tokens": int, "max_completion_tokens": int, "frequency_penalty": _NUMBER,
                  "presence_penalty": _NUMBER, "stop": (str, list), "tools": list, "response_format": dict,
                  "stream_options": dict, "reasoning": dict, "user": str, "tool_choice": (str, dict),
                  "parallel_tool_calls": bool}
_OPENAI_MESSAGE_FIELDS = {"role": str, "content": (str, list), "tool_calls": list, "tool_call_id": str, "name": str,
                          "reasoning": str, "reasoning_content": str}
_RESPONSE_FORMATS = ("text", "json_object", "json_schema")


def openai_request_check(body: dict) -> None:
    """A chat completion request's fields of the types OpenAI takes, or a 400 in OpenAI's words naming
    the first that is not."""
    _openai_typed(body, _OPENAI_FIELDS, "")
    if body.get("messages") is None:
        raise OpenAIError(400, "Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter")
    for index, message in enumerate(body["messages"]):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise _invalid_type(where, dict, message)
        _openai_typed(message, _OPENAI_MESSAGE_FIELDS, f"{where}.")
        for number, part in enumerate(message.get("content") if isinstance(message.get("content"), list) else ()):
            image = part.get("image_url") if isinstance(part, dict) else None
            if not isinstance(part, dict) or not isinstance(part.get("type"), str) or not _is(part.get("text", ""), str) \
                    or not (image is None or isinstance(image, dict) and isinstance(image.get("url"), str)):
                raise _invalid_type(f"{where}.content[{number}]", dict, part)
        for number, call in enumerate(message.get("tool_calls") or ()):
            try:
                _function_call(call, f"{where}.tool_calls[{number}]")
            except WireError as exc:
                raise OpenAIError(400, exc.message, param=f"{where}.tool_calls[{number}]", code="invalid_type") from None
    stop = body.get("stop")
    if isinstance(stop, list) and not all(isinstance(item, str) for item in stop):
        raise OpenAIError(400, "Invalid type for 'stop': expected a string or an array of strings.", param="stop",
                          code="invalid_type")
    response_format = body.get("response_format") or {}
    if response_format and response_format.get("type") not in _RESPONSE_FORMATS:
        raise OpenAIError(400, f"Invalid value for 'response_format.type': expected one of {', '.join(_RESPONSE_FORMATS)}.",
                          param="response_format.type", code="invalid_value")
    if response_format.get("type") == "json_schema":
        schema = response_format.get("json_schema")
        if not isinstance(schema, dict) or not _is(schema.get("schema", {}), dict):
            raise OpenAIError(400, "Invalid type for 'response_format.json_schema': expected an object with a "
                                   "'schema' object.", param="response_format.json_schema", code="invalid_type")
    _openai_typed(body.get("stream_options") or {}, {"include_usage": bool}, "stream_options.")
    try:
        to_tool_specs(body.get("tools"))
    except WireError as exc:
        raise OpenAIError(400, exc.message, param="tools", code="invalid_type") from None


def _openai_typed(obj: dict, fields: dict, where: str) -> None:
    for name, expected in fields.items():
        value = obj.get(name)
        if value is not None and not _is(value, expected):
            raise _invalid_type(f"{where}{name}", expected, value)


def _invalid_type(name: str, expected, value) -> OpenAIError:
    return OpenAIError(400, f"Invalid type for '{name}': expected {_named(expected)}, but got {_json_type(value)} "
                            f"instead.", param=name, code="invalid_type")


def openai_to_ollama(body: dict) -> dict:
    """An OpenAI chat completion request as the equivalent Ollama /api/chat body. As in Ollama's own
    /v1, an assistant message's `reasoning` (or `reasoning_content`) is its `thinking`, and
    `reasoning_effort` (or `reasoning.effort`) is `think`."""
    messages = []
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not all(isinstance(m, dict) for m in raw_messages):
        raise WireError(400, "messages must be a list of objects")
    for raw in raw_messages:
        content = raw.get("content")
        images = []
        if isinstance(content, list):  # content parts: text and image_url (data URLs)
            texts = []
            for part in content:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "text":
                    texts.append(str(part.get("text") or ""))
                elif part.get("type") == "image_url":
                    url = (part.get("image_url") or {}).get("url", "") if isinstance(part.get("image_url"), dict) else ""
                    if url.startswith("data:") and "," in url:
                        images.append(url.split(",", 1)[1])
            content = "\n".join(texts)
        message = {"role": raw.get("role") or "user", "content": content or ""}
        thinking = raw.get("reasoning") or raw.get("reasoning_content")
        if isinstance(thinking, str) and thinking:
            message["thinking"] = thinking
        if images:
            message["images"] = images
        if raw.get("tool_calls"):
            message["tool_calls"] = [
                {"id": call.get("id"), "function": {"name": (call.get("function") or {}).get("name"),
                                                    "arguments": _arguments((call.get("function") or {}).get("arguments"))}}
                for call in raw["tool_calls"] if isinstance(call, dict)]
        if raw.get("tool_call_id"):
            message["tool_call_id"] = raw["tool_call_id"]
        messages.append(message)
    options = {}
    for name, option in (("temperature", "temperature"), ("top_p", "top_p"), ("seed", "seed"),
                         ("max_tokens", "num_predict"), ("max_completion_tokens", "num_predict"),
                         ("frequency_penalty", "frequency_penalty"), ("presence_penalty", "presence_penalty")):
        if body.get(name) is not None:
            options[option] = body[name]
    if body.get("stop") is not None:
        options["stop"] = body["stop"] if isinstance(body["stop"], list) else [body["stop"]]
    ollama = {"model": body.get("model"), "messages": messages, "stream": bool(body.get("stream")),
              "options": options}
    if body.get("tools"):
        ollama["tools"] = body["tools"]
    response_format = body.get("response_format")
    if isinstance(response_format, dict):
        if response_format.get("type") == "json_object":
            ollama["format"] = "json"
        elif response_format.get("type") == "json_schema":
            ollama["format"] = (response_format.get("json_schema") or {}).get("schema") or "json"
    think = _think(body)
    if think is not None:
        ollama["think"] = think
    return ollama


def openai_choices(body: dict) -> int:
    """OpenAI's `n`: how many choices to answer with (1 to MAX_CHOICES), or a 400 in OpenAI's words."""
    n = body.get("n")
    if n is None:
        return 1
    if not isinstance(n, int) or isinstance(n, bool):
        raise WireError(400, f"Invalid type for 'n': expected an integer, but got {_json_type(n)} instead.",
                        param="n", code="invalid_type")
    if n < 1:
        raise WireError(400, f"Invalid 'n': integer below minimum value. Expected a value >= 1, but got {n} "
                             f"instead.", param="n", code="integer_below_min_value")
    if n > MAX_CHOICES:
        raise WireError(400, f"Invalid 'n': integer above maximum value. Expected a value <= {MAX_CHOICES}, but got "
                             f"{n} instead (the proxy asks its upstream once per choice).",
                        param="n", code="integer_above_max_value")
    return n


def choice_options(options: dict, index: int) -> dict:
    """The options of choice `index` of several: a `seed` moves on by the index, so seeded choices
    differ (as OpenAI's do) and each stays reproducible."""
    seed = options.get("seed")
    if index == 0 or not isinstance(seed, int) or isinstance(seed, bool):
        return options
    return {**options, "seed": seed + index}


def openai_completion_id() -> str:
    return f"chatcmpl-{secrets.token_hex(12)}"


def openai_tool_calls(raw_calls) -> list[dict]:
    calls = []
    for index, raw in enumerate(raw_calls or ()):
        call = tool_call_of(raw)
        if call is None:
            continue
        calls.append({"index": index, "id": call.id or f"call_{secrets.token_hex(8)}", "type": "function",
                      "function": {"name": call.name, "arguments": json.dumps(call.arguments)}})
    return calls


def openai_finish_reason(done_reason_: str | None, has_tool_calls: bool) -> str:
    if has_tool_calls:
        return "tool_calls"
    return "length" if done_reason_ == "length" else "stop"


def openai_reasoning(thinking: str) -> dict:
    """A reasoning model's thinking, under both names clients read it by: `reasoning` (Ollama's own
    /v1, vLLM) and `reasoning_content` (DeepSeek, LiteLLM, older vLLM)."""
    return {"reasoning_content": thinking, "reasoning": thinking}


def openai_error(status: int, message: str, *, param: str | None = None, code: str | None = None) -> dict:
    kind = {400: "invalid_request_error", 401: "authentication_error", 404: "invalid_request_error"}.get(
        status, "api_error")
    if code is None and status == 404:
        code = "model_not_found"
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _think(body: dict):
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else body.get("reasoning_effort")
    if effort is None or effort == "":
        return None
    if not isinstance(effort, str) or effort not in _THINK:
        raise WireError(400, f"invalid reasoning value: {json.dumps(effort)} (must be \"minimal\", \"low\", \"medium\", "
                             f"\"high\", \"xhigh\", \"ultra\", \"max\", or \"none\")", param="reasoning_effort")
    return _THINK[effort]


def _json_type(value) -> str:
    return {bool: "a boolean", str: "a string", int: "an integer", float: "a decimal", list: "an array",
            dict: "an object"}.get(type(value), "null")


def _arguments(arguments):
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments else {}
        except ValueError:
            return {"raw": arguments}
    return arguments or {}


# --- embeddings: Ollama's /api/embed and /api/embeddings, OpenAI's /v1/embeddings ------------------------------

def embed_inputs(body: dict) -> list[str]:
    """/api/embed's `input`, a string or a list of strings, as a list (an empty string: nothing to embed)."""
    raw = body.get("input")
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and all(isinstance(text, str) for text in raw):
        return raw
    raise WireError(400, "invalid input type")


def embedding_prompt(body: dict) -> list[str]:
    """/api/embeddings' `prompt` as the list of texts to embed (an empty prompt: none)."""
    prompt = body.get("prompt")
    if prompt is None or prompt == "":
        return []
    if not isinstance(prompt, str):
        raise WireError(400, "json: cannot unmarshal prompt: it must be a string")
    return [prompt]


def embed_dimensions(body: dict) -> int:
    """`dimensions` (0: the model's own)."""
    dimensions = body.get("dimensions")
    if dimensions is None:
        return 0
    if not isinstance(dimensions, int) or isinstance(dimensions, bool) or dimensions < 0:
        raise WireError(400, "json: cannot unmarshal dimensions: it must be a non-negative integer",
                        param="dimensions")
    return dimensions


def shortened(vectors: list[list[float]], dimensions: int) -> list[list[float]]:
    """Each vector cut to its first `dimensions` values and normalised again, as Ollama does (and as
    OpenAI's text-embedding-3 shortens)."""
    if not dimensions:
        return vectors
    cut = []
    for vector in vectors:
        if dimensions >= len(vector):
            cut.append(vector)
            continue
        head = vector[:dimensions]
        norm = math.sqrt(sum(value * value for value in head)) or 1e-12
        cut.append([value / norm for value in head])
    return cut


def embed_answer(model: str, vectors: list[list[float]], tokens: int, started: float) -> dict:
    """Ollama's /api/embed answer (it leaves out zero counts and durations)."""
    answer = {"model": model, "embeddings": vectors}
    if vectors:
        answer["total_duration"] = int((time.perf_counter() - started) * 1e9)
    if tokens:
        answer["prompt_eval_count"] = tokens
    return answer


def openai_embedding_request(body: dict) -> tuple[list[str], int, str]:
    """OpenAI's embeddings request as (texts, dimensions, encoding format), or a 400 as Ollama's /v1 says it."""
    encoding = body.get("encoding_format") or "float"
    if not isinstance(encoding, str) or encoding.lower() not in ("float", "base64"):
        raise WireError(400, f"Invalid value for 'encoding_format' = {encoding}. Supported values: "
                             f"['float', 'base64'].", param="encoding_format")
    raw = body.get("input")
    if raw == "":
        raw = [""]
    if raw is None or raw == []:
        raise WireError(400, "invalid input", param="input")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(text, str) for text in raw):
        raise WireError(400, "invalid input type (strings only: token arrays are not supported)", param="input")
    return raw, embed_dimensions(body), encoding.lower()


def openai_embedding_list(model: str, vectors: list[list[float]], tokens: int, encoding: str) -> dict:
    """OpenAI's embeddings answer: floats, or base64 of little-endian float32 (the `openai` client's default)."""
    def encoded(vector):
        if encoding == "base64":
            return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        return vector

    return {"object": "list", "model": model,
            "data": [{"object": "embedding", "embedding": encoded(vector), "index": index}
                     for index, vector in enumerate(vectors)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
