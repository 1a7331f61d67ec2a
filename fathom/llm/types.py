"""The shapes of a model call, the same for every provider: messages in, a completion (or a stream of
chunks ending in one) out. Plain frozen dataclasses: cheap to build, safe to share, easy to log."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

MESSAGE_ROLES = ("system", "user", "assistant", "tool")
# Opens a user message the caller's machinery wrote into a conversation (a harness's plan, a trigger's
# notice, a healing prompt), said by no one: model middleware that learns from conversations skips it.
HARNESS_NOTE = "[harness]"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's request to run a tool. `arguments` is already parsed JSON (a dict)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call; `parameters` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An image attached to a message, named by its media hash (the lake stores the bytes);
    `fathom.llm.media` turns it into what a provider accepts."""

    media_hash: str
    media_type: str = "image/png"


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation.

    role: "system" | "user" | "assistant" | "tool". An assistant message may carry `tool_calls`; a
    tool message answers one of them and names it in `tool_call_id`. `images` are media hashes."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    images: tuple[ImageRef, ...] = ()
    name: str | None = None

    def __post_init__(self):
        if self.role not in MESSAGE_ROLES:
            raise ValueError(f"message role must be one of {', '.join(MESSAGE_ROLES)}, got {self.role!r}")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message must name the call it answers in tool_call_id")
        # Accept lists and plain hashes for convenience; store tuples so the message stays hashable.
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if not isinstance(self.images, tuple) or any(isinstance(i, str) for i in self.images):
            images = tuple(ImageRef(i) if isinstance(i, str) else i for i in self.images)
            object.__setattr__(self, "images", images)

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str, images=()) -> Message:
        return cls("user", content, images=tuple(images))

    @classmethod
    def note(cls, content: str, images=()) -> Message:
        """A harness note: a user message opened by HARNESS_NOTE."""
        return cls("user", f"{HARNESS_NOTE} {content}", images=tuple(images))

    @classmethod
    def assistant(cls, content: str = "", tool_calls=()) -> Message:
        return cls("assistant", content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(cls, tool_call_id: str, content: str, name: str | None = None) -> Message:
        return cls("tool", content, tool_call_id=tool_call_id, name=name)

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id:
            data["tool_call_id"] = self.tool_call_id
        if self.images:
            data["images"] = [{"media_hash": i.media_hash, "media_type": i.media_type} for i in self.images]
        if self.name:
            data["name"] = self.name
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> Message:
        return cls(
            role=data["role"], content=data.get("content") or "",
            tool_calls=tuple(ToolCall(c["id"], c["name"], dict(c.get("arguments") or {}))
                             for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            images=tuple(ImageRef(i["media_hash"], i.get("media_type", "image/png")) for i in data.get("images") or ()),
            name=data.get("name"),
        )


class StopReason(StrEnum):
    """Why the model stopped, the same words for every provider."""

    END = "end"  # a natural end of the answer
    TOOL_CALLS = "tool_calls"  # it wants tools run before it goes on
    MAX_TOKENS = "max_tokens"  # cut at the output limit
    STOP_SEQUENCE = "stop_sequence"
    CONTENT_FILTER = "content_filter"
    REFUSAL = "refusal"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one call. `cached_tokens` are the part of `input_tokens` served from the provider's
    prompt cache (billed cheaper by most)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cached_tokens": self.cached_tokens}


@dataclass(frozen=True, slots=True)
class Completion:
    """What a model answered. `cost` is in US dollars from the model's prices in the registry (0 when
    unknown); `latency_ms` is wall time of the whole call, retries included; `call_id` and `trace_id`
    name the call's span in the trace. `thinking` is a reasoning model's thinking before its answer
    (when it was asked to think and its provider shows it), never part of `text`."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: StopReason = StopReason.END
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    latency_ms: float = 0.0
    model: str = ""
    provider: str = ""
    request_id: str | None = None
    call_id: str | None = None
    trace_id: str | None = None
    attempts: int = 1
    thinking: str = ""

    def __post_init__(self):
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if not isinstance(self.stop_reason, StopReason):
            object.__setattr__(self, "stop_reason", StopReason(self.stop_reason))

    @property
    def message(self) -> Message:
        """The assistant message to append to the conversation before the next call."""
        return Message("assistant", self.text, tool_calls=self.tool_calls)

    def json(self) -> Any:
        """The text parsed as JSON (for calls made with a JSON `response_format`)."""
        return json.loads(self.text)

    def to_dict(self) -> dict:
        return {
            "text": self.text, "tool_calls": [c.to_dict() for c in self.tool_calls],
            "stop_reason": str(self.stop_reason), "usage": self.usage.to_dict(), "cost": self.cost,
            "latency_ms": self.latency_ms, "model": self.model, "provider": self.provider,
            "request_id": self.request_id, "call_id": self.call_id, "trace_id": self.trace_id,
            "attempts": self.attempts, "thinking": self.thinking,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Completion:
        """The completion `to_dict` gave (a task's argument)."""
        usage = data.get("usage") or {}
        return cls(
            text=data.get("text") or "",
            tool_calls=tuple(ToolCall(c["id"], c["name"], dict(c.get("arguments") or {}))
                             for c in data.get("tool_calls") or ()),
            stop_reason=data.get("stop_reason") or StopReason.END,
            usage=Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                        int(usage.get("cached_tokens") or 0)),
            cost=float(data.get("cost") or 0.0), latency_ms=float(data.get("latency_ms") or 0.0),
            model=data.get("model") or "", provider=data.get("provider") or "", request_id=data.get("request_id"),
            call_id=data.get("call_id"), trace_id=data.get("trace_id"), attempts=int(data.get("attempts") or 1),
            thinking=data.get("thinking") or "",
        )


@dataclass(frozen=True, slots=True)
class Embeddings:
    """What an embedding model answered: one vector per text, in the texts' order; `usage.input_tokens`
    counts the texts' tokens (an estimate where the model says none)."""

    vectors: list[list[float]]
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    provider: str = ""


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """One piece of a streamed answer: a text delta, a thinking delta (a reasoning model's, which
    comes before its text), a finished tool call, or (last) the whole completion with usage and cost.
    Exactly one of the four is set."""

    text: str = ""
    tool_call: ToolCall | None = None
    completion: Completion | None = None
    thinking: str = ""

    @property
    def done(self) -> bool:
        return self.completion is not None
