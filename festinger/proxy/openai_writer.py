"""OpenAI's chat completion as the proxy writes it: server-sent `chat.completion.chunk`s ending in
`data: [DONE]`, or one `chat.completion` object.

An answer has `n` choices, each from its own upstream call: `OpenAIWriter.choices[i]` is the writer of
choice i, with the interface of the proxy's Ollama writers (`delta`, `done`, `whole`, `fail`, and
`ollama_object` for an Ollama upstream's objects, rewritten). Streamed, each choice's chunks go out as
they come, tagged with its index; the usage and `[DONE]` follow the last choice's end. Whole, the
object is written once every choice has ended. The usage counts the prompt once and the completion
tokens of every choice, as OpenAI does.

A model's thinking (an Ollama upstream's or a registry model's) comes out as `reasoning_content` and
`reasoning` (wire.openai_reasoning); a chunk carrying thinking and content is split in two, thinking
first, as Ollama's own /v1 does."""

from __future__ import annotations

import json
import time

from fathom.llm.types import Completion, StopReason, Usage
from festinger.proxy import wire

EVENT_STREAM = b"text/event-stream"


class OpenAIWriter:
    def __init__(self, request, model: str, stream: bool, *, include_usage: bool = False, choices: int = 1):
        self.request, self.model, self.stream = request, model, stream
        self.include_usage = include_usage
        self.id = wire.openai_completion_id()
        self.created = int(time.time())
        self.choices = tuple(OpenAIChoice(self, index) for index in range(choices))
        self.ended = False

    async def fail(self, message: str) -> None:
        """An error ends the whole answer: a 502 in OpenAI's shape, or the stream's last event."""
        if self.ended:
            return
        self.ended = True
        error = wire.openai_error(502, message)
        if not self.request.started:
            await self.request.json(502, error)
            return
        await self.request.end(b"data: " + json.dumps(error).encode() + b"\n\n")

    async def event(self, payload: dict) -> None:
        if self.ended:
            return
        if not self.request.started:
            await self.request.start(200, EVENT_STREAM)
        chunk = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                 **payload}
        await self.request.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")

    async def choice_done(self) -> None:
        """A choice ended: once all have, the usage and [DONE], or the whole object."""
        if self.ended or not all(choice.finished for choice in self.choices):
            return
        usage = self._usage()
        if self.stream:
            if self.include_usage:
                await self.event({"choices": [], "usage": usage})
            self.ended = True
            await self.request.end(b"data: [DONE]\n\n")
            return
        self.ended = True
        await self.request.json(200, {"id": self.id, "object": "chat.completion", "created": self.created,
                                      "model": self.model, "choices": [choice.whole_choice() for choice in self.choices],
                                      "usage": usage})

    def _usage(self) -> dict:
        prompt = max(choice.usage.input_tokens for choice in self.choices)
        completion = sum(choice.usage.output_tokens for choice in self.choices)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class OpenAIChoice:
    """The writer of one choice of an OpenAI answer."""

    translates = True  # an Ollama upstream's objects are rewritten, not relayed as bytes

    def __init__(self, answer: OpenAIWriter, index: int):
        self.answer, self.index = answer, index
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.tool_calls: list = []
        self.sent_role = False
        self.finished = False
        self.finish_reason = "stop"
        self.usage = Usage()

    async def ollama_object(self, obj: dict) -> None:
        """One object of an Ollama upstream's answer, rewritten."""
        if obj.get("error"):
            await self.fail(str(obj["error"]))
            return
        message = obj.get("message") or {}
        calls = [c for c in (wire.tool_call_of(raw) for raw in message.get("tool_calls") or ()) if c is not None]
        if message.get("content") or message.get("thinking") or calls:
            await self.delta(content=message.get("content") or "", tool_calls=calls,
                             thinking=message.get("thinking") or "")
        if obj.get("done"):
            final = Completion(usage=Usage(int(obj.get("prompt_eval_count") or 0), int(obj.get("eval_count") or 0)),
                               stop_reason=StopReason.MAX_TOKENS if obj.get("done_reason") == "length" else StopReason.END)
            await self.done(final, time.perf_counter(), reason=obj.get("done_reason"))

    async def delta(self, *, content: str = "", tool_calls=(), thinking: str = "") -> None:
        self.tool_calls.extend(tool_calls)
        if not self.answer.stream:
            self.text.append(content)
            self.reasoning.append(thinking)
            return
        if thinking:
            await self._chunk(wire.openai_reasoning(thinking))
        if content or tool_calls or not thinking:
            delta = {"content": content} if content else {}
            if tool_calls:
                delta["tool_calls"] = wire.openai_tool_calls([wire.ollama_tool_call(c) for c in tool_calls])
            await self._chunk(delta)

    async def done(self, completion: Completion, started: float, *, reason: str | None = None) -> None:
        if self.finished:
            return
        self.finished = True
        if not self.tool_calls:
            self.tool_calls = list(completion.tool_calls)
        self.finish_reason = "stop" if reason == wire.LOOP_DONE_REASON else wire.openai_finish_reason(
            "length" if completion.stop_reason == StopReason.MAX_TOKENS else reason, bool(self.tool_calls))
        self.usage = completion.usage
        if self.answer.stream:
            if not self.sent_role:  # an empty answer still opens with its role
                await self._chunk({"content": ""})
            await self.answer.event({"choices": [{"index": self.index, "delta": {},
                                                  "finish_reason": self.finish_reason}]})
        else:
            if not "".join(self.text):
                self.text = [completion.text]
            if not "".join(self.reasoning):
                self.reasoning = [completion.thinking]
        await self.answer.choice_done()

    async def whole(self, completion: Completion, started: float, *, reason: str | None = None) -> None:
        await self.delta(content=completion.text, tool_calls=completion.tool_calls, thinking=completion.thinking)
        await self.done(completion, started, reason=reason)

    async def fail(self, message: str) -> None:
        self.finished = True
        await self.answer.fail(message)

    def whole_choice(self) -> dict:
        message = {"role": "assistant", "content": "".join(self.text)}
        reasoning = "".join(self.reasoning)
        if reasoning:
            message.update(wire.openai_reasoning(reasoning))
        if self.tool_calls:
            message["tool_calls"] = wire.openai_tool_calls([wire.ollama_tool_call(c) for c in self.tool_calls])
        return {"index": self.index, "message": message, "finish_reason": self.finish_reason}

    async def _chunk(self, delta: dict) -> None:
        if not self.sent_role:
            delta = {"role": "assistant", **delta}
            self.sent_role = True
        await self.answer.event({"choices": [{"index": self.index, "delta": delta, "finish_reason": None}]})
