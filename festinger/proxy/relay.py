"""An answer relayed to the client as it comes, watched for a loop on the way (the loop guard's in-answer
repetition cuts the stream).

- `ollama_relay`: forwards a request to the Ollama upstream and writes its NDJSON bytes through
  unchanged (or, for an OpenAI client, its objects rewritten by the writer), while an `Assembler` reads
  the lines on the way, to watch for a loop and to assemble the answer the proxy learns from;
- `registry_relay`: writes a registry model's streamed chunks (festinger/proxy/threads.py
  `RegistryStream`) through the writer.

Also the errors of a failed upstream request (`UPSTREAM_ERRORS`) and how they are said."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable

import aiohttp

from fathom.llm.types import Completion, StopReason, Usage
from festinger.loops.guard import BREAKER_PROVIDER, StreamRepetition
from festinger.proxy import wire
from festinger.proxy.request import JSON, Request
from festinger.proxy.wire import OpenAIError, WireError

# Awaited once an answer is whole (or cut), before its last bytes go out: the loop guard counts it there
# (festinger.proxy.app.AnswerCount: a cut at once, any other answer once those bytes are out).
Whole = Callable[[Completion, str | None], Awaitable[None]]
# What a failed upstream request raises: the connection's errors, and a timeout.
UPSTREAM_ERRORS = (aiohttp.ClientError, TimeoutError)
JSON_HEADERS = {"content-type": "application/json"}


async def ollama_relay(request: Request, client: aiohttp.ClientSession, url: str, body: dict, watcher: Assembler,
                       writer, answered: Callable[[], None] | None, whole: Whole | None) -> str | None:
    """Forward `body` to an Ollama upstream and its answer to the client as it comes (`answered` runs
    when its first piece arrives; `whole(completion, cut)` is awaited once the answer is whole or cut,
    before its last bytes go out). Returns the repeating piece when the loop guard cut the answer."""
    counted = False

    async def count(cut: str | None = None) -> None:
        nonlocal counted
        if whole is not None and not counted:
            counted = True
            await whole(watcher.completion or watcher.completion_so_far(), cut)

    try:
        async with client.post(url, data=json.dumps(body).encode(), headers=JSON_HEADERS) as answer:
            if answer.status != 200:
                data = await answer.read()
                if writer.translates:
                    raise OpenAIError(answer.status, error_message(data))
                await request.respond(answer.status, data, content_type=JSON)
                return None
            if not writer.translates:
                await request.start(200, answer.headers.get("content-type", "application/x-ndjson").encode())
            async for piece in answer.content.iter_any():
                if answered is not None:  # the answer's first piece
                    answered, _ = None, answered()
                cut = watcher.feed(piece)
                if writer.translates:
                    if cut is not None:
                        for obj in watcher.take():
                            await writer.ollama_object(obj)
                        await count(cut)
                        await writer.done(watcher.completion_so_far(), watcher.started,
                                          reason=wire.LOOP_DONE_REASON)
                        return cut
                    if watcher.completion is not None:  # the closing object is among those to write
                        await count()
                    for obj in watcher.take():
                        await writer.ollama_object(obj)
                    continue
                passed = watcher.passed_bytes()
                if cut is not None:
                    closing = watcher.cut_chunk()
                    await count(cut)
                    await request.write(passed)
                    await request.end(wire.ndjson(closing))
                    return cut
                if watcher.completion is not None:
                    await count()
                if passed:
                    await request.write(passed)
            unread = watcher.buffer  # a whole answer ("stream": false) is one object, read here
            objects = watcher.take(final=True)
            watcher.close()
            await count(watcher.cut)
            if writer.translates:
                for obj in objects:
                    await writer.ollama_object(obj)
                if not writer.finished:
                    await writer.done(watcher.completion_so_far(), watcher.started)
            else:
                await request.end(json.dumps(watcher.final).encode() if watcher.cut else unread)
            return watcher.cut
    except UPSTREAM_ERRORS as exc:
        if not request.started:
            raise WireError(502, f"the Ollama upstream did not answer: {said(exc)}") from None
        await writer.fail(f"the Ollama upstream broke off: {said(exc)}")
        return None


async def registry_relay(stream, writer, model: str, loop_settings, started: float,
                         whole: Whole | None) -> tuple[Completion, str | None]:
    """Write a registry model's answer (`stream`'s chunks) to `writer`: (its completion, the repeating
    piece when the loop guard cut it). `whole(completion, cut)` is awaited before its last bytes go out."""
    repetition = StreamRepetition(loop_settings)
    thinking_repetition = StreamRepetition(loop_settings)  # a reasoning model's thinking loops too
    text, thinking, tool_calls = [], [], []
    while True:
        item = await stream.next()
        if item.completion is not None:
            completion = item.completion
            reason = wire.LOOP_DONE_REASON if completion.provider == BREAKER_PROVIDER else None
            if whole is not None:
                await whole(completion, None)
            await writer.done(completion, started, reason=reason)
            return completion, None
        if item.tool_call is not None:
            tool_calls.append(item.tool_call)
            await writer.delta(tool_calls=[item.tool_call])
            continue
        if item.thinking:
            thinking.append(item.thinking)
            unit = thinking_repetition.feed(item.thinking)
        else:
            text.append(item.text)
            unit = repetition.feed(item.text)
        await writer.delta(content=item.text, thinking=item.thinking)
        if unit is not None:
            completion = Completion(text="".join(text), tool_calls=tuple(tool_calls), model=model,
                                    stop_reason=StopReason.OTHER, usage=Usage(), thinking="".join(thinking))
            if whole is not None:
                await whole(completion, unit)
            await writer.done(completion, started, reason=wire.LOOP_DONE_REASON)
            return completion, unit


class Assembler:
    """Reads an Ollama upstream's NDJSON as it passes: the answer so far (for learning and the loop
    guard's in-answer repetition) and, when asked, the objects themselves."""

    def __init__(self, kind: str, repetition: StreamRepetition, *, streamed: bool = True):
        self.kind = kind
        self.streamed = streamed  # else the answer is one object ("stream": false), checked whole
        self.cut: str | None = None  # the repeating piece a whole answer was cut at
        self.repetition = repetition
        self.thinking_repetition = StreamRepetition(repetition.settings)
        self.buffer = b""
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.tool_calls: list = []
        self.final: dict | None = None
        self.completion: Completion | None = None
        self.pending: list[dict] = []
        self.last: dict | None = None
        self.started = time.perf_counter()
        self._passed = b""

    def feed(self, piece: bytes) -> str | None:
        """Take bytes of the answer; the repeating piece if the loop guard cuts the stream here (the
        bytes to pass on end with the line that made the cut)."""
        buffer = self.buffer + piece if self.buffer else piece
        if not self.streamed:  # one object: read whole by `take(final=True)`
            self.buffer = buffer
            return None
        start, cut = 0, None
        while cut is None and (end := buffer.find(b"\n", start)) >= 0:
            cut = self._line(buffer[start:end])
            start = end + 1
        self._passed, self.buffer = buffer[:start], buffer[start:]
        return cut

    def _line(self, line: bytes) -> str | None:
        if not line.strip():
            return None
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        if not self.streamed and isinstance(obj, dict) and obj.get("done"):
            self.cut = _whole_cut(obj, self.kind, self.repetition, self.thinking_repetition)
        self.pending.append(obj)
        self.last = obj
        message = obj.get("message") or {}
        delta = message.get("content") if self.kind == "chat" else obj.get("response")
        thought = message.get("thinking") or obj.get("thinking")
        if thought:
            self.thinking.append(thought)
        for raw in message.get("tool_calls") or ():
            call = wire.tool_call_of(raw)
            if call is not None:
                self.tool_calls.append(call)
        if delta:
            self.text.append(delta)
        if obj.get("done"):
            self.final = obj
            self.completion = self.completion_so_far()
            return None
        if thought:  # a reasoning model's thinking loops as often as its answer
            cut = self.thinking_repetition.feed(thought)
            if cut is not None:
                return cut
        if delta:
            return self.repetition.feed(delta)
        return None

    def take(self, final: bool = False) -> list[dict]:
        if final and self.buffer.strip():
            self._line(self.buffer)
            self.buffer = b""
        taken, self.pending = self.pending, []
        return taken

    def passed_bytes(self) -> bytes:
        return self._passed

    def cut_chunk(self) -> dict:
        """The closing object of a stream the loop guard cut."""
        self.completion = self.completion_so_far()
        model = (self.last or {}).get("model", "")
        closing = {"model": model, "created_at": wire.created_at(), "done": True,
                   "done_reason": wire.LOOP_DONE_REASON, "total_duration": int((time.perf_counter() - self.started) * 1e9)}
        if self.kind == "chat":
            closing["message"] = {"role": "assistant", "content": ""}
        else:
            closing["response"] = ""
        return closing

    def completion_so_far(self) -> Completion:
        final = self.final or {}
        usage = Usage(int(final.get("prompt_eval_count") or 0), int(final.get("eval_count") or 0))
        reason = StopReason.MAX_TOKENS if final.get("done_reason") == "length" else StopReason.END
        return Completion(text="".join(self.text), tool_calls=tuple(self.tool_calls), stop_reason=reason,
                          usage=usage, model=str(final.get("model") or ""), provider="ollama")

    def close(self) -> None:
        if self.completion is None:
            self.completion = self.completion_so_far()


def _whole_cut(obj: dict, kind: str, repetition: StreamRepetition, thinking_repetition: StreamRepetition) -> str | None:
    """A whole answer's text and thinking cut, in `obj`, where a stream of them would have been (done
    for the loop's reason); the repeating piece, or None when neither repeats itself."""
    holder = obj.get("message") if kind == "chat" else obj
    if not isinstance(holder, dict):
        return None
    found = None
    for name, watcher in (("thinking", thinking_repetition), ("content" if kind == "chat" else "response", repetition)):
        text = holder.get(name)
        cut = watcher.cut_of(text) if isinstance(text, str) and text else None
        if cut is not None:
            holder[name], found = cut
            obj["done_reason"] = wire.LOOP_DONE_REASON
    return found


def said(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def error_message(data: bytes) -> str:
    """The message of an upstream's error body (Ollama's `{"error": ...}`, else the text itself)."""
    try:
        return str(json.loads(data).get("error") or data.decode(errors="replace"))
    except (ValueError, AttributeError):
        return data.decode(errors="replace")[:500]
