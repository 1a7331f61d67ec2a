"""Ollama's answer as the proxy writes it: NDJSON chunks (`application/x-ndjson`, one object a line,
the last with `"done": true`) when streamed, one JSON object when not (`"stream": false`).

`ChatWriter` writes /api/chat's shape, `GenerateWriter` /api/generate's. Both have the interface the
proxy writes every answer through (festinger/proxy/openai_writer.py has OpenAI's): `delta` (a piece of
text, thinking or a tool call), `done` (the closing object), `whole` (an answer written at once) and
`fail` (an error after the answer began: Ollama's error object as the stream's last line). An Ollama
upstream's own bytes are relayed as they come, not rewritten (`translates` is False)."""

from __future__ import annotations

from fathom.llm.types import Completion
from festinger.proxy import wire
from festinger.proxy.request import Request

NDJSON = b"application/x-ndjson"


class OllamaWriter:
    """Writes an answer to the client as Ollama chunks (streamed) or one object."""

    translates = False  # whether an Ollama upstream's objects are rewritten (OpenAI) or relayed as bytes

    def __init__(self, request: Request, model: str, stream: bool):
        self.request, self.model, self.stream = request, model, stream
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.tool_calls: list = []
        self.finished = False

    @property
    def choices(self) -> tuple:
        """Ollama's API answers with one choice: the writer itself (OpenAI's may have several)."""
        return (self,)

    async def delta(self, *, content: str = "", tool_calls=(), thinking: str = "") -> None:
        if not self.stream:
            self.text.append(content)
            self.thinking.append(thinking)
            self.tool_calls.extend(tool_calls)
            return
        if not self.request.started:
            await self.request.start(200, NDJSON)
        await self.request.write(wire.ndjson(self._chunk(content, tool_calls, thinking)))

    async def done(self, completion: Completion, started: float, *, reason: str | None = None) -> None:
        self.finished = True
        if self.stream:
            if not self.request.started:
                await self.request.start(200, NDJSON)
            await self.request.end(wire.ndjson(self._done(completion, started, "", (), "", reason)))
            return
        text = "".join(self.text) or (completion.text if not self.text else "")
        thinking = "".join(self.thinking) or (completion.thinking if not self.thinking else "")
        calls = self.tool_calls or list(completion.tool_calls)
        await self.request.json(200, self._done(completion, started, text, calls, thinking, reason))

    async def whole(self, completion: Completion, started: float, *, reason: str | None = None) -> None:
        if self.stream:
            await self.delta(content=completion.text, tool_calls=completion.tool_calls, thinking=completion.thinking)
        else:
            self.text, self.tool_calls = [completion.text], list(completion.tool_calls)
            self.thinking = [completion.thinking]
        await self.done(completion, started, reason=reason)

    async def fail(self, message: str) -> None:
        """An error after the answer began: Ollama's error object as the stream's last line."""
        self.finished = True
        if not self.request.started:
            await self.request.json(502, {"error": message})
            return
        await self.request.end(wire.ndjson({"error": message}))

    def _chunk(self, content, tool_calls, thinking) -> dict:
        raise NotImplementedError

    def _done(self, completion, started, content, tool_calls, thinking, reason) -> dict:
        raise NotImplementedError


class ChatWriter(OllamaWriter):
    def _chunk(self, content, tool_calls, thinking):
        return wire.chat_chunk(self.model, content=content, tool_calls=tool_calls, thinking=thinking)

    def _done(self, completion, started, content, tool_calls, thinking, reason):
        return wire.chat_done(self.model, completion, started, content=content, tool_calls=tool_calls,
                              thinking=thinking, reason=reason)


class GenerateWriter(OllamaWriter):
    def _chunk(self, content, tool_calls, thinking):
        return wire.generate_chunk(self.model, content, thinking)

    def _done(self, completion, started, content, tool_calls, thinking, reason):
        return wire.generate_done(self.model, completion, started, text=content, thinking=thinking, reason=reason)
