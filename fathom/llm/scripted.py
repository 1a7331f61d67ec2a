"""The scripted model, for tests: you queue its answers, it records what it was sent.

The queue and the record live in Redis, and the model is a registry row, so a Celery worker in
another process answers from the same script the test wrote. Typical use (the `scripted_llm`
fixture in tests/conftest.py does the first line for you):

    from fathom.llm.scripted import Script

    script = Script.install(workspace)                  # every role of `workspace` -> this script
    script.reply("Paris.")                              # next call answers with text
    script.call_tool("search", {"query": "capital"})    # ... or asks for a tool
    script.fail("rate_limited", retry_after=1)          # ... or fails like a provider would
    script.reply(stream_error_after=2, text="a b c d")  # ... or breaks a stream after 2 chunks
    script.reply("slow", latency=1.0)                   # ... or answers after 1 s (parallelism tests)
    script.reply("a long answer", chunk_chars=4, chunk_delay=0.02)  # streamed 4 characters every 20 ms
    script.reply("42.", thinking="Six times seven.")    # ... thinking first (streamed before the text)
    script.reply()                                      # ... or answers empty: LLMEmptyCompletion, retried

    completion = complete(workspace=workspace, role="main", messages=[Message.user("Capital of France?")])

    script.sent[0].messages[-1].content == "Capital of France?"   # what the model was sent
    script.sent[0].tools, .role, .response_format, .options       # the rest of the request
    script.pending                                               # answers not used yet
    script.first_chunks                                          # when each streamed answer's first chunk left (epoch s)

Calling a scripted model with nothing queued raises `ScriptExhausted` (and says which script).
`Script.install(workspace, roles=("verifier",))` scripts only some roles; several scripts can
serve different roles of one workspace. `Script("name")` opens an existing script by name, e.g.
the one FATHOM_DEFAULT_MODEL="scripted:name" points at. A scripted model can think: asked to
(`thinking_options`), it is sent the option `think` with the level. Failure kinds for `fail`: timeout,
connection, rate_limited, server_error, bad_request, authentication, permission_denied,
not_found.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from fathom.llm import errors
from fathom.llm.services import model_assign, model_create
from fathom.llm.types import Completion, Message, StopReason, StreamChunk, ToolCall, Usage
from fathom.redis_client import get_redis

KEY = "fathom:llm:scripted:{name}:{part}"
EXPIRE_SECONDS = 24 * 3600

FAILURES = {
    "timeout": (errors.LLMTimeout, None),
    "connection": (errors.LLMConnectionError, None),
    "rate_limited": (errors.LLMRateLimited, 429),
    "server_error": (errors.LLMServerError, 500),
    "bad_request": (errors.LLMBadRequest, 400),
    "authentication": (errors.LLMAuthenticationError, 401),
    "permission_denied": (errors.LLMPermissionDenied, 403),
    "not_found": (errors.LLMModelNotFound, 404),
}


@dataclass(frozen=True)
class SentRequest:
    """One request as the scripted model received it (after middleware)."""

    role: str
    model: str
    messages: list[Message]
    tools: list[dict] = field(default_factory=list)
    response_format: dict | None = None
    options: dict = field(default_factory=dict)
    stream: bool = False
    workspace_id: int | None = None

    @property
    def tool_names(self) -> list[str]:
        return [tool["name"] for tool in self.tools]

    @property
    def last_user_text(self) -> str:
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")


class Script:
    """A named queue of answers and record of requests (see the module docstring)."""

    def __init__(self, name: str):
        self.name = name

    @classmethod
    def install(cls, workspace, *, roles=("*",), name: str | None = None, input_price_per_mtok=0,
                output_price_per_mtok=0) -> Script:
        """A new script serving `roles` in `workspace` (registry rows created, caches invalidated)."""
        script = cls(name or f"script-{uuid.uuid4().hex[:10]}")
        model = model_create(workspace=workspace, name=f"scripted-{script.name}", provider="scripted", model=script.name,
                             input_price_per_mtok=input_price_per_mtok, output_price_per_mtok=output_price_per_mtok)
        for role in roles:
            model_assign(workspace=workspace, role=role, model=model)
        script.reset()
        return script

    # --- queueing answers ---------------------------------------------------------------------------

    def reply(self, text: str = "", *, tool_calls=(), stop_reason: str | None = None, input_tokens: int | None = None,
              output_tokens: int | None = None, cached_tokens: int = 0, stream_error_after: int | None = None,
              request_id: str | None = None, latency: float = 0, chunk_chars: int | None = None,
              chunk_delay: float = 0, thinking: str = "") -> Script:
        """Queue an answer. Tokens default to a count of the prompt's and answer's characters / 4.
        Streamed, the thinking then the text come a word at a time, or `chunk_chars` characters at a
        time, with `chunk_delay` seconds before every chunk but the first."""
        if chunk_chars is not None and chunk_chars < 1:
            raise ValueError("chunk_chars must be at least 1")
        calls = [c.to_dict() if isinstance(c, ToolCall) else dict(c) for c in tool_calls]
        for index, call in enumerate(calls):
            call.setdefault("id", f"call-{uuid.uuid4().hex[:8]}-{index}")
            call.setdefault("arguments", {})
        self._push({
            "text": text, "tool_calls": calls,
            "stop_reason": stop_reason or (StopReason.TOOL_CALLS if calls else StopReason.END),
            "input_tokens": input_tokens, "output_tokens": output_tokens, "cached_tokens": cached_tokens,
            "stream_error_after": stream_error_after, "request_id": request_id, "latency": latency,
            "chunk_chars": chunk_chars, "chunk_delay": chunk_delay, "thinking": thinking,
        })
        return self

    def call_tool(self, name: str, arguments: dict | None = None, *, id: str | None = None, text: str = "") -> Script:
        """Queue an answer that calls one tool."""
        call = {"name": name, "arguments": arguments or {}}
        if id:
            call["id"] = id
        return self.reply(text, tool_calls=[call])

    def fail(self, kind: str, message: str | None = None, *, retry_after: float | None = None) -> Script:
        """Queue a failure, raised as the typed error a real provider's failure would be."""
        if kind not in FAILURES:
            raise ValueError(f"failure kind must be one of {', '.join(FAILURES)}, got {kind!r}")
        self._push({"error": kind, "message": message or f"scripted {kind}", "retry_after": retry_after})
        return self

    # --- reading back -----------------------------------------------------------------------------------

    @property
    def sent(self) -> list[SentRequest]:
        raw = get_redis().lrange(self.redis_key("sent"), 0, -1)
        return [_sent_from_json(json.loads(item)) for item in raw]

    @property
    def first_chunks(self) -> list[float]:
        """When the first chunk of each streamed answer was handed over (time.time()), in order."""
        return [float(t) for t in get_redis().lrange(self.redis_key("first_chunk"), 0, -1)]

    @property
    def pending(self) -> int:
        return get_redis().llen(self.redis_key("queue"))

    def reset(self) -> None:
        get_redis().delete(self.redis_key("queue"), self.redis_key("sent"), self.redis_key("first_chunk"))

    def _push(self, item: dict) -> None:
        pipe = get_redis().pipeline()
        pipe.rpush(self.redis_key("queue"), json.dumps(item))
        pipe.expire(self.redis_key("queue"), EXPIRE_SECONDS)
        pipe.execute()

    def redis_key(self, part: str) -> str:
        return KEY.format(name=self.name, part=part)


class ScriptedProvider:
    name = "scripted"

    def thinking_options(self, level: str) -> dict:
        return {"think": level}

    def complete(self, request, *, timeout: float | None = None) -> Completion:
        item = self._next(request)
        if item.get("latency"):
            time.sleep(item["latency"])  # a simulated model's latency
        return _completion(request, item)

    def stream(self, request, *, timeout: float | None = None) -> Iterator[StreamChunk]:
        item = self._next(request)
        if item.get("latency"):
            time.sleep(item["latency"])  # before the first chunk, as a model thinks before it writes
        completion = _completion(request, item)
        size = item.get("chunk_chars")

        def split(text):
            return [text[i:i + size] for i in range(0, len(text), size)] if size else re.findall(r"\S+\s*", text)

        chunks = [StreamChunk(thinking=piece) for piece in split(completion.thinking)]
        chunks += [StreamChunk(text=piece) for piece in split(completion.text)]
        break_after = item.get("stream_error_after")
        delay = item.get("chunk_delay") or 0
        for index, chunk in enumerate(chunks):
            if break_after is not None and index >= break_after:
                raise errors.LLMConnectionError("scripted stream broke", provider="scripted", model=request.model.model)
            if index and delay:
                time.sleep(delay)
            if index == 0:
                self._first_chunk(request)
            yield chunk
        for call in completion.tool_calls:
            yield StreamChunk(tool_call=call)
        yield StreamChunk(completion=completion)

    def _first_chunk(self, request) -> None:
        key = Script(request.model.model).redis_key("first_chunk")
        pipe = get_redis().pipeline()
        pipe.rpush(key, repr(time.time()))
        pipe.expire(key, EXPIRE_SECONDS)
        pipe.execute()

    def _next(self, request) -> dict:
        script = Script(request.model.model)
        record = json.dumps({
            "role": request.role, "model": request.model.model, "workspace_id": request.workspace_id,
            "messages": [m.to_dict() for m in request.messages],
            "tools": [t.to_dict() for t in request.tools or ()], "response_format": request.response_format,
            "options": {k: v for k, v in request.options.items() if _jsonable(v)}, "stream": request.stream,
        })
        pipe = get_redis().pipeline()
        pipe.rpush(script.redis_key("sent"), record)
        pipe.expire(script.redis_key("sent"), EXPIRE_SECONDS)
        pipe.lpop(script.redis_key("queue"))
        raw = pipe.execute()[-1]
        if raw is None:
            raise errors.ScriptExhausted(
                f"the scripted model {script.name!r} was called but has no answer queued "
                f"(queue one with Script({script.name!r}).reply(...))", provider="scripted", model=script.name)
        item = json.loads(raw)
        if item.get("error"):
            error_class, status = FAILURES[item["error"]]
            raise error_class(item["message"], provider="scripted", model=script.name, http_status=status,
                              retry_after=item.get("retry_after"))
        return item


def _completion(request, item: dict) -> Completion:
    text = item.get("text") or ""
    calls = tuple(ToolCall(c["id"], c["name"], dict(c.get("arguments") or {})) for c in item.get("tool_calls") or ())
    prompt_chars = sum(len(m.content) for m in request.messages)
    input_tokens = item.get("input_tokens")
    output_tokens = item.get("output_tokens")
    return Completion(
        text=text, tool_calls=calls, stop_reason=StopReason(item.get("stop_reason") or "end"),
        usage=Usage(input_tokens=(prompt_chars + 3) // 4 if input_tokens is None else input_tokens,
                    output_tokens=(len(text) + 3) // 4 if output_tokens is None else output_tokens,
                    cached_tokens=item.get("cached_tokens") or 0),
        model=request.model.model, provider="scripted",
        request_id=item.get("request_id") or f"scripted-{uuid.uuid4().hex[:12]}", thinking=item.get("thinking") or "",
    )


def _sent_from_json(data: dict) -> SentRequest:
    return SentRequest(role=data["role"], model=data["model"], workspace_id=data.get("workspace_id"),
                       messages=[Message.from_dict(m) for m in data["messages"]], tools=data.get("tools") or [],
                       response_format=data.get("response_format"), options=data.get("options") or {},
                       stream=bool(data.get("stream")))


def _jsonable(value) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))


