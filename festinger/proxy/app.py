"""The proxy as a plain ASGI app: Ollama's API and OpenAI's chat completions for one workspace.

    GET|HEAD /                 "Ollama is running"
    GET  /api/version          Ollama's version (or the API version the proxy speaks)
    GET  /api/tags             Ollama's models, the routes of admin's table and the registry's models
    GET  /api/ps               Ollama's running models
    POST /api/show             a model's details
    POST /api/chat             NDJSON stream by default, one object with "stream": false
    POST /api/generate         the same, for a prompt
    POST /api/embed            passed through to Ollama; a registry model's embeddings in Ollama's shape
    POST /api/embeddings       the same, Ollama's older shape
    POST /v1/chat/completions  OpenAI's (SSE with "stream": true; `n` choices, thinking as reasoning_content)
    POST /v1/embeddings        OpenAI's, from Ollama's /api/embed or a registry model
    GET  /v1/models            OpenAI's model list

An Ollama upstream's bytes reach the client as they come (the proxy reads the NDJSON lines on the way
only to watch for a loop and to assemble the answer for learning); a client that goes away cancels
the upstream request. The middleware's `before` runs once, before the upstream call, on the event
loop unless a cache must be read from the database, then in a thread (`ProxyApp.prepared`); the
claim it sends (which messages are new to the conversation: festinger.conversation.Claim) is read
once the upstream's first piece is out, so that its round trip overlaps the upstream's; after the client has
its last byte, one message to the memory queue hands the rest (`after`, the trace) to a worker.

Ollama's `think` is passed to an Ollama upstream untouched; a registry model is sent its provider's
option for it (`fathom.llm.providers.thinking_options`), or the request is Ollama's 400 when the model
cannot think, and its thinking is written as Ollama's `thinking` (OpenAI's `reasoning_content`) before
its answer, watched for a loop as the answer is."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import aiohttp
from celery import signature
from django.conf import settings
from django.core.exceptions import SynchronousOnlyOperation
from django.utils.module_loading import import_string

from fathom.channels import one_look
from fathom.errors import ApplicationError
from fathom.llm import client as llm_client
from fathom.llm.errors import LLMError
from fathom.llm.providers import thinking_options
from fathom.llm.types import Completion, ImageRef, StopReason, StreamChunk, Usage
from fathom.tenancy import Workspace
from fathom.tracing.spans import span
from festinger import cache
from festinger.loops.guard import (
    BREAKER_PROVIDER,
    STREAM_CUT_TASK,
    StreamRepetition,
    fingerprint,
    loop_settings,
)
from festinger.proxy import wire
from festinger.proxy.conversation import (
    ProxiedCall,
    call_notes_context,
    connections_returned,
    outcomes_send,
    session_context,
)
from festinger.proxy.openai_writer import OpenAIWriter
from festinger.proxy.upstreams import OLLAMA, Upstream, ollama_base, registry_names, upstream_for
from festinger.proxy.wire import WireError

log = logging.getLogger(__name__)

NDJSON = b"application/x-ndjson"
JSON = b"application/json; charset=utf-8"
SESSION_HEADER = b"x-festinger-session"
# Ollama options a registry model understands, under the names `complete` takes.
_REGISTRY_OPTIONS = {"temperature": "temperature", "top_p": "top_p", "num_predict": "max_tokens", "stop": "stop",
                     "seed": "seed"}

# Finished calls go to the memory queue together: a publish costs the proxy about 0.6 ms of CPU, more
# than the rest of a call's work, so one message carries the calls finished within FINISH_BATCH_SECONDS,
# up to FINISH_BATCH_MAX calls or FINISH_BATCH_CHARS characters of their messages (encoding a message
# holds the interpreter: a big one would stall the requests meanwhile).
FINISH_BATCH_SECONDS = 0.2
FINISH_BATCH_MAX = 50
FINISH_BATCH_CHARS = 200_000

Resolver = Callable[[dict], Awaitable[int | None]]
# What a failed upstream request raises: the connection's errors, and a timeout.
UPSTREAM_ERRORS = (aiohttp.ClientError, TimeoutError)
_JSON_HEADERS = {"content-type": "application/json"}
_SHORT = aiohttp.ClientTimeout(total=5)
_PASSED = aiohttp.ClientTimeout(total=120)


class ProxyApp:
    """The proxy for the workspace that `workspace_of(scope)` names (None: 401). `prefix` is stripped
    from paths (the mount under the main port)."""

    def __init__(self, *, workspace_of: Resolver, prefix: str = "", threads: int = 64):
        self.workspace_of = workspace_of
        self.prefix = prefix
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="festinger-proxy")
        self._client: aiohttp.ClientSession | None = None
        self._background: set[asyncio.Task] = set()
        self._finished: list[tuple] = []
        self._finished_chars = 0

    @property
    def client(self) -> aiohttp.ClientSession:
        # One per event loop: the app is built before uvicorn's loop runs. aiohttp rather than httpx
        # (the project's HTTP client elsewhere): on this path httpx costs the proxy about 0.9 ms of CPU
        # a request more (tests/bench/bench_proxy.py), most of the added latency allowed.
        if self._client is None:
            self._client = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, connect=60, sock_connect=10),
                connector=aiohttp.TCPConnector(limit=512, ttl_dns_cache=60), auto_decompress=True)
        return self._client

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope["path"]
        if self.prefix:
            path = path[len(self.prefix):] or "/"
        request = Request(scope, receive, send, path)
        try:
            workspace_id = await self.workspace_of(scope)
            if workspace_id is None:
                await request.error(WireError(401, "unauthorized"))
                return
            request.workspace_id = workspace_id
            await self._route(request)
        except WireError as exc:
            await request.error(exc)
        except LLMError as exc:
            await request.error(WireError(exc.http_status if exc.http_status in (400, 401, 404, 429) else 502,
                                          exc.message))

    async def _route(self, request: Request) -> None:
        method, path = request.method, request.path
        handler = _ROUTES.get(path)
        if handler is None:
            raise WireError(404, "404 page not found")
        allowed, function = handler
        if method == "HEAD" and "GET" in allowed:
            method = "GET"
        if method not in allowed:
            raise WireError(405, "405 method not allowed")
        await function(self, request)

    async def _lifespan(self, receive, send):
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def close(self) -> None:
        self._finished_send()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._client is not None:
            await self._client.close()
            self._client = None

    def in_thread(self, function, *args):
        return asyncio.get_running_loop().run_in_executor(self.executor, function, *args)

    def after_response(self, function, *args) -> None:
        """Run `function` (a publish to the memory queue) in a thread once the response is out, never
        delaying it (T33)."""
        task = asyncio.ensure_future(self.in_thread(_logged(function), *args))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def finished(self, call: ProxiedCall, completion: Completion, kind: str, stream_cut: str | None = None) -> None:
        """A call's response is out: its outcome joins the next message to the memory queue."""
        self._finished.append((call, completion, kind, stream_cut))
        self._finished_chars += sum(len(message.content) for message in call.request.messages)
        if len(self._finished) >= FINISH_BATCH_MAX or self._finished_chars >= FINISH_BATCH_CHARS:
            self._finished_send()
        elif len(self._finished) == 1:
            asyncio.get_running_loop().call_later(FINISH_BATCH_SECONDS, self._finished_send)

    def queued_send(self, call: ProxiedCall) -> None:
        """What the call's recollection queued (cues, writes) goes out now, whatever the upstream answered."""
        if call.sends:
            self.after_response(_sent, call.sends)

    def _finished_send(self) -> None:
        if self._finished:
            finished, self._finished, self._finished_chars = self._finished, [], 0
            self.after_response(_outcomes_send, finished)

    # --- the small routes ------------------------------------------------------------------------------

    async def root(self, request):
        await request.respond(200, b"Ollama is running", content_type=b"text/plain; charset=utf-8")

    async def version(self, request):
        base = ollama_base()
        if base:
            try:
                async with self.client.get(f"{base}/api/version", timeout=_SHORT) as answer:
                    if answer.status == 200:
                        await request.respond(200, await answer.read(), content_type=JSON)
                        return
            except UPSTREAM_ERRORS:
                pass
        await request.json(200, {"version": wire.OLLAMA_API_VERSION})

    async def tags(self, request):
        models = await self._ollama_models("/api/tags")
        known = {entry.get("name") for entry in models}
        for name, family in await self.in_thread(_registry_names, request.workspace_id):
            if name not in known:
                models.append(wire.model_entry(name, family=family))
        await request.json(200, {"models": models})

    async def ps(self, request):
        await request.json(200, {"models": await self._ollama_models("/api/ps")})

    async def show(self, request):
        body = wire.json_body(await request.body())
        name = body.get("model") or body.get("name")
        if not name or not isinstance(name, str):
            raise WireError(400, "model is required")
        upstream = await self.in_thread(_upstream_for, request.workspace_id, name)
        if upstream is None:
            raise wire.model_not_found(name)
        if upstream.kind == OLLAMA:
            await self._pass_through(request, "/api/show", {**body, "model": upstream.target})
            return
        thinks = thinking_options(upstream.model.provider, "medium") is not None
        await request.json(200, wire.show_entry(name, family=upstream.family, thinking=thinks))

    async def embed(self, request):
        """/api/embed and /api/embeddings: passed through to an Ollama upstream; a registry model's
        embeddings (`fathom.llm.embed`) in Ollama's shape."""
        body = wire.json_body(await request.body())
        name = wire.model_name(body)
        upstream = await self.in_thread(_upstream_for, request.workspace_id, name)
        if upstream is None:
            raise wire.model_not_found(name)
        if upstream.kind == OLLAMA:
            await self._pass_through(request, request.path, {**body, "model": upstream.target})
            return
        if request.path == "/api/embeddings":
            vectors, _ = await self.in_thread(_registry_embeddings, request.workspace_id, upstream,
                                              wire.embedding_prompt(body))
            await request.json(200, {"embedding": vectors[0] if vectors else []})
            return
        started = time.perf_counter()
        texts, dimensions = wire.embed_inputs(body), wire.embed_dimensions(body)
        vectors, tokens = await self.in_thread(_registry_embeddings, request.workspace_id, upstream, texts)
        await request.json(200, wire.embed_answer(name, wire.shortened(vectors, dimensions), tokens, started))

    async def openai_embeddings(self, request):
        """OpenAI's /v1/embeddings, from an Ollama upstream's /api/embed or a registry model."""
        body = wire.json_body(await request.body())
        name = wire.model_name(body)
        texts, dimensions, encoding = wire.openai_embedding_request(body)
        upstream = await self.in_thread(_upstream_for, request.workspace_id, name)
        if upstream is None:
            raise wire.model_not_found(name)
        if upstream.kind == OLLAMA:
            vectors, tokens = await self._ollama_embeddings(upstream.target, texts, dimensions)
        else:
            vectors, tokens = await self.in_thread(_registry_embeddings, request.workspace_id, upstream, texts)
            vectors = wire.shortened(vectors, dimensions)
        await request.json(200, wire.openai_embedding_list(name, vectors, tokens, encoding))

    async def _ollama_embeddings(self, model: str, texts: list[str], dimensions: int) -> tuple[list, int]:
        body = {"model": model, "input": texts, **({"dimensions": dimensions} if dimensions else {})}
        status, content = await self._ollama_post("/api/embed", body)
        if status != 200:
            raise WireError(status, _error_message(content))
        try:
            data = json.loads(content)
            return list(data["embeddings"]), int(data.get("prompt_eval_count") or 0)
        except (ValueError, KeyError, TypeError):
            raise WireError(502, "the Ollama upstream answered /api/embed with no embeddings") from None

    async def _ollama_models(self, path: str) -> list[dict]:
        base = ollama_base()
        if not base:
            return []
        try:
            async with self.client.get(f"{base}{path}", timeout=_SHORT) as answer:
                return list(json.loads(await answer.read()).get("models") or []) if answer.status == 200 else []
        except (*UPSTREAM_ERRORS, ValueError, AttributeError):
            log.warning("festinger proxy: the Ollama at %s did not answer %s", base, path)
            return []

    async def _pass_through(self, request, path: str, body: dict) -> None:
        status, data = await self._ollama_post(path, body)
        await request.respond(status, data, content_type=JSON)

    async def _ollama_post(self, path: str, body: dict) -> tuple[int, bytes]:
        """One whole JSON exchange with the Ollama upstream: its status and body."""
        try:
            async with self.client.post(f"{ollama_base()}{path}", data=json.dumps(body).encode(),
                                        headers=_JSON_HEADERS, timeout=_PASSED) as answer:
                return answer.status, await answer.read()
        except UPSTREAM_ERRORS as exc:
            raise WireError(502, f"the Ollama upstream did not answer: {_said(exc)}") from None

    # --- chat and generate -----------------------------------------------------------------------------

    async def chat(self, request):
        body = wire.json_body(await request.body())
        await self.converse(request, body, kind="chat")

    async def generate(self, request):
        body = wire.json_body(await request.body())
        await self.converse(request, body, kind="generate")

    async def converse(self, request, body: dict, *, kind: str, answer_as=None) -> None:
        """Answer an /api/chat or /api/generate body (`answer_as`: another API's writer of the chunks)."""
        name = wire.model_name(body)
        options = wire.options_of(body)
        if kind == "chat":
            raw_messages = wire.chat_messages(body)
        else:
            prompt, system = body.get("prompt") or "", body.get("system") or ""
            if not isinstance(prompt, str) or not isinstance(system, str):
                raise WireError(400, "json: cannot unmarshal prompt: it must be a string")
            raw_messages = ([{"role": "system", "content": system}] if system else []) + (
                [{"role": "user", "content": prompt}] if prompt else [])
            if not raw_messages:  # Ollama loads the model and answers done at once
                upstream = await self.in_thread(_upstream_for, request.workspace_id, name)
                if upstream is None:
                    raise wire.model_not_found(name)
                await request.json(200, {"model": name, "created_at": wire.created_at(), "response": "",
                                         "done": True, "done_reason": "load"})
                return
        stream = body.get("stream", True) is not False
        session = request.header(SESSION_HEADER) or fingerprint(
            next((m.get("content") or "" for m in raw_messages if m.get("role") == "system"), ""),
            next((m.get("content") or "" for m in raw_messages if m.get("role") == "user"), ""))
        writer = answer_as or (ChatWriter if kind == "chat" else GenerateWriter)(request, name, stream)
        call = ProxiedCall(workspace_id=request.workspace_id, upstream=None, raw_messages=raw_messages,
                           session=session, options=options)
        try:
            upstream = await self.prepared(call, body, len(writer.choices))
            if upstream is None:
                raise wire.model_not_found(name)
            if upstream.kind == OLLAMA:
                await self._from_ollama(request, body, call, kind=kind, writer=writer)
            else:
                await self._from_registry(request, body, call, kind=kind, writer=writer)
        finally:
            try:
                call.settle()  # (when the upstream never answered) a claim is read whatever happened
            finally:
                self.queued_send(call)

    async def prepared(self, call: ProxiedCall, body: dict, choices: int) -> Upstream | None:
        """`_prepare` on the event loop while what it reads is in this process's memory (the usual case:
        a thread's round trip would be a fifth of the latency the proxy adds), in a thread when a cache
        must be filled from the database: Django refuses a query on the loop before sending it, and
        `_prepare` fills its caches before the middleware writes anything."""
        try:
            return _prepare(call, body, choices)
        except SynchronousOnlyOperation:
            prepared = self.in_thread(_prepare_in_thread, call, body, choices)
            try:
                return await prepared
            except asyncio.CancelledError:  # the thread goes on: what it claims is read once it is done
                prepared.add_done_callback(lambda _done: call.settle())
                raise

    async def _from_ollama(self, request, body: dict, call: ProxiedCall, *, kind: str, writer) -> None:
        started = time.perf_counter()
        if call.answer is not None:  # the loop breaker answered
            await _breaker_answers(writer, call.answer, started)
            self.finished(call, call.answer, kind)
            return
        forwarded = dict(body, model=call.upstream.target)
        if call.request is not None:
            messages = call.forwarded_messages()
            if kind == "chat":
                forwarded["messages"] = messages
            elif body.get("raw") is not True:
                systems = [m["content"] for m in messages if m.get("role") == "system" and m.get("content")]
                if systems:
                    forwarded["system"] = "\n\n".join(systems)
            if call.forwarded_options() != (body.get("options") or {}):
                forwarded["options"] = call.forwarded_options()
        url = f"{ollama_base()}/api/{kind}"
        # The claim's answer is read once the upstream's first piece arrived, at the relay's next wait:
        # after that piece went out, so the claim's round trip overlaps the upstream's and delays nothing.
        settle_soon = lambda: asyncio.get_running_loop().call_soon(call.settle)  # noqa: E731

        async def relay(index: int, choice) -> tuple[Completion | None, str | None]:
            watcher = Assembler(kind, StreamRepetition(call.loop_settings))
            sent = dict(forwarded, options=wire.choice_options(forwarded.get("options") or {}, index)) \
                if index else forwarded
            cut = await request.relay(self.client, url, sent, watcher, choice, answered=settle_soon)
            return watcher.completion, cut

        completion, cut = await _each_choice(request, writer, relay)
        call.settle()  # (a whole answer: its claim is read here, once it is out) before its outcome is queued
        if completion is not None and call.request is not None:  # (a raw prompt skips the middleware)
            self.finished(call, completion, kind, cut)

    async def _from_registry(self, request, body: dict, call: ProxiedCall, *, kind: str, writer) -> None:
        started = time.perf_counter()
        call.settle()  # (several choices: the middleware ran in `_prepare`)
        if call.answer is not None:  # (several choices) the loop breaker answered
            await _breaker_answers(writer, call.answer, started)
            self.finished(call, call.answer, kind)
            return

        async def answer(index: int, choice) -> tuple[Completion | None, str | None]:
            return await self._registry_choice(request, body, call, kind, choice, index, started)

        completion, cut = await _each_choice(request, writer, answer)
        if call.request is not None:  # several choices: the middleware ran here, its `after` sees the first
            if completion is not None:
                self.finished(call, completion, kind, cut)
        elif cut is not None:
            self.after_response(_stream_cut_later, call, completion, cut)

    async def _registry_choice(self, request, body: dict, call: ProxiedCall, kind: str, writer, index: int,
                               started: float) -> tuple[Completion | None, str | None]:
        """One answer of a registry model, streamed to `writer`: (its completion, the repeating piece if
        the loop guard cut it); (None, None) when the client went away."""
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue = asyncio.Queue()
        cancelled = threading.Event()
        self.in_thread(_run_registry, call, body, kind, loop, chunks, cancelled, index)
        repetition = StreamRepetition(call.loop_settings)
        thinking_repetition = StreamRepetition(call.loop_settings)  # a reasoning model's thinking loops too
        text, thinking, tool_calls = [], [], []
        try:
            while True:
                item = await request.until_disconnect(chunks.get())
                if isinstance(item, BaseException):
                    raise item
                if item.completion is not None:
                    completion = item.completion
                    reason = wire.LOOP_DONE_REASON if completion.provider == BREAKER_PROVIDER else None
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
                    completion = Completion(text="".join(text), tool_calls=tuple(tool_calls), model=call.upstream.target,
                                            stop_reason=StopReason.OTHER, usage=Usage(), thinking="".join(thinking))
                    await writer.done(completion, started, reason=wire.LOOP_DONE_REASON)
                    return completion, unit
        except ClientGone:
            return None, None
        finally:
            cancelled.set()  # the model call, if still running, is abandoned at its next chunk

    async def openai_chat(self, request):
        """OpenAI's chat completions (errors in OpenAI's shape: the path says so); `n` choices are `n`
        upstream calls at once, around one pass of the middleware (festinger.proxy.openai_writer)."""
        body = wire.json_body(await request.body())
        ollama = wire.openai_to_ollama(body)
        if not isinstance(ollama.get("model"), str) or not ollama["model"]:
            raise OpenAIError(400, "model is required")
        writer = OpenAIWriter(request, ollama["model"], ollama["stream"], choices=wire.openai_choices(body),
                              include_usage=bool((body.get("stream_options") or {}).get("include_usage")))
        await self.converse(request, ollama, kind="chat", answer_as=writer)

    async def openai_models(self, request):
        names = [entry["name"] for entry in await self._ollama_models("/api/tags")]
        names += [name for name, _ in await self.in_thread(_registry_names, request.workspace_id) if name not in names]
        await request.json(200, {"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "fathom"} for name in names]})


class OpenAIError(WireError):
    """A WireError answered in OpenAI's error shape."""


# --- the request and its writers ------------------------------------------------------------------------

class ClientGone(Exception):
    """The client closed the connection."""


class Request:
    __slots__ = ("scope", "receive", "send", "path", "method", "workspace_id", "_disconnected", "_started")

    def __init__(self, scope, receive, send, path):
        self.scope, self.receive, self.send, self.path = scope, receive, send, path
        self.method = scope["method"]
        self.workspace_id = None
        self._disconnected: asyncio.Future | None = None
        self._started = False

    def header(self, name: bytes) -> str | None:
        for key, value in self.scope["headers"]:
            if key == name:
                return value.decode("latin-1")
        return None

    async def body(self) -> bytes:
        chunks = []
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ClientGone()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                return b"".join(chunks)

    async def start(self, status: int, content_type: bytes) -> None:
        self._started = True
        await self.send({"type": "http.response.start", "status": status,
                         "headers": [(b"content-type", content_type)]})

    async def write(self, data: bytes) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": True})

    async def end(self, data: bytes = b"") -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": False})

    async def respond(self, status: int, data: bytes, *, content_type: bytes = JSON) -> None:
        await self.send({"type": "http.response.start", "status": status,
                         "headers": [(b"content-type", content_type), (b"content-length", str(len(data)).encode())]})
        self._started = True
        if self.method != "HEAD":
            await self.end(data)
        else:
            await self.end()

    async def json(self, status: int, obj) -> None:
        await self.respond(status, json.dumps(obj).encode())

    async def error(self, exc: WireError) -> None:
        if self._started:
            return
        if isinstance(exc, OpenAIError) or self.path.startswith("/v1/"):
            await self.json(exc.status, wire.openai_error(exc.status, exc.message, param=exc.param, code=exc.code))
        elif exc.status in (404, 405) and exc.message.startswith(str(exc.status)):
            await self.respond(exc.status, exc.message.encode(), content_type=b"text/plain")
        else:
            await self.json(exc.status, {"error": exc.message})

    def disconnected(self) -> asyncio.Future:
        """Resolves when the client goes away (the request body has been read already)."""
        if self._disconnected is None:
            async def watch():
                while True:
                    message = await self.receive()
                    if message["type"] == "http.disconnect":
                        return
            self._disconnected = asyncio.ensure_future(watch())
        return self._disconnected

    async def until_disconnect(self, awaitable):
        """`awaitable`'s result, or ClientGone when the client leaves first."""
        task = asyncio.ensure_future(awaitable)
        gone = self.disconnected()
        done, _ = await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            return task.result()
        task.cancel()
        raise ClientGone()

    async def relay(self, client: aiohttp.ClientSession, url: str, body: dict, watcher: Assembler,
                    writer, answered: Callable[[], None]) -> str | None:
        """Forward `body` to an Ollama upstream and its answer to the client as it comes (`answered`
        runs when its first piece arrives). Returns the repeating piece when the loop guard cut the
        stream."""
        task, relaying, left = asyncio.current_task(), True, False

        def leave(_gone) -> None:  # cancelling the relay closes the upstream response: Ollama stops generating
            nonlocal left
            if relaying:
                left = True
                task.cancel()

        self.disconnected().add_done_callback(leave)
        try:
            return await self._relay(client, url, body, watcher, writer, answered)
        except asyncio.CancelledError:
            if left and task.uncancel() == 0:  # the client went away (and nothing else cancelled the task)
                return None
            raise
        finally:
            relaying = False

    async def _relay(self, client, url, body, watcher: Assembler, writer, answered) -> str | None:
        try:
            async with client.post(url, data=json.dumps(body).encode(), headers=_JSON_HEADERS) as answer:
                if answer.status != 200:
                    data = await answer.read()
                    if writer.translates:
                        raise OpenAIError(answer.status, _error_message(data))
                    await self.respond(answer.status, data, content_type=JSON)
                    return None
                if not writer.translates:
                    await self.start(200, answer.headers.get("content-type", "application/x-ndjson").encode())
                async for piece in answer.content.iter_any():
                    if answered is not None:  # the answer's first piece
                        answered, _ = None, answered()
                    cut = watcher.feed(piece)
                    if writer.translates:
                        for obj in watcher.take():
                            await writer.ollama_object(obj)
                        if cut is not None:
                            await writer.done(watcher.completion_so_far(), watcher.started,
                                              reason=wire.LOOP_DONE_REASON)
                            return cut
                        continue
                    passed = watcher.passed_bytes()
                    if cut is not None:
                        await self.write(passed)
                        await self.end(wire.ndjson(watcher.cut_chunk()))
                        return cut
                    if passed:
                        await self.write(passed)
                if writer.translates:
                    for obj in watcher.take(final=True):
                        await writer.ollama_object(obj)
                    if not writer.finished:
                        await writer.done(watcher.completion_so_far(), watcher.started)
                else:
                    await self.end(watcher.buffer)  # a whole answer ("stream": false) has no closing newline:
                    watcher.take(final=True)          # read once it is out
                watcher.close()
                return None
        except UPSTREAM_ERRORS as exc:
            if not self._started:
                raise WireError(502, f"the Ollama upstream did not answer: {_said(exc)}") from None
            await writer.fail(f"the Ollama upstream broke off: {_said(exc)}")
            return None


class Assembler:
    """Reads an Ollama upstream's NDJSON as it passes: the answer so far (for learning and the loop
    guard's in-answer repetition) and, when asked, the objects themselves."""

    def __init__(self, kind: str, repetition: StreamRepetition):
        self.kind = kind
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


class _Writer:
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
        if not self.request._started:
            await self.request.start(200, NDJSON)
        await self.request.write(wire.ndjson(self._chunk(content, tool_calls, thinking)))

    async def done(self, completion: Completion, started: float, *, reason: str | None = None) -> None:
        self.finished = True
        if self.stream:
            if not self.request._started:
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
        if not self.request._started:
            await self.request.json(502, {"error": message})
            return
        await self.request.end(wire.ndjson({"error": message}))


class ChatWriter(_Writer):
    def _chunk(self, content, tool_calls, thinking):
        return wire.chat_chunk(self.model, content=content, tool_calls=tool_calls, thinking=thinking)

    def _done(self, completion, started, content, tool_calls, thinking, reason):
        return wire.chat_done(self.model, completion, started, content=content, tool_calls=tool_calls,
                              thinking=thinking, reason=reason)


class GenerateWriter(_Writer):
    def _chunk(self, content, tool_calls, thinking):
        return wire.generate_chunk(self.model, content, thinking)

    def _done(self, completion, started, content, tool_calls, thinking, reason):
        return wire.generate_done(self.model, completion, started, text=content, thinking=thinking, reason=reason)


async def _each_choice(request: Request, writer, run) -> tuple[Completion | None, str | None]:
    """`run(index, choice)` for every choice of `writer` at once (Ollama's API and most OpenAI requests
    have one); the first choice's result. One choice failing fails the answer: the others are
    cancelled, and the error is the response, or its stream's last event once the answer began."""
    tasks = []
    try:
        if len(writer.choices) == 1:
            return await run(0, writer.choices[0])
        tasks = [asyncio.ensure_future(run(index, choice)) for index, choice in enumerate(writer.choices)]
        return (await asyncio.gather(*tasks))[0]
    except (WireError, LLMError) as exc:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if not request._started:
            raise
        await writer.fail(exc.message)
        return None, None


async def _breaker_answers(writer, answer: Completion, started: float) -> None:
    for choice in writer.choices:
        await choice.whole(answer, started, reason=wire.LOOP_DONE_REASON)


# --- in threads --------------------------------------------------------------------------------------

def _upstream_for(workspace_id: int, name: str) -> Upstream | None:
    with connections_returned():
        return upstream_for(workspace_id=workspace_id, name=name)


def _registry_embeddings(workspace_id: int, upstream: Upstream, texts: list[str]) -> tuple[list, int]:
    """A registry model's embeddings of `texts`, and their tokens (`fathom.llm.embed`: the offline
    model's are the project's embedder's)."""
    if not texts:
        return [], 0
    with connections_returned():
        answer = llm_client.embed(workspace=workspace_id, model=upstream.model, texts=texts, actor_id="festinger:proxy")
    return answer.vectors, answer.usage.input_tokens


def _registry_names(workspace_id: int):
    with connections_returned():
        return registry_names(workspace_id=workspace_id)


def _prepare(call: ProxiedCall, body: dict, choices: int) -> Upstream | None:
    """Resolve the model; run the middleware's `before` for an Ollama upstream, and for a registry
    model asked for several choices (one conversation turn: the middleware runs once, here, and the
    model calls go without it). A single registry call runs it inside `fathom.llm.complete`. What the
    middleware reads from the database (the thresholds, the world) is read first, before it writes; a
    registry request the client must mend (its tools, format or `think`) is its 400 before that."""
    name = wire.model_name(body)
    with one_look():  # each channel read once: what was published before the call arrived is heard
        call.upstream = upstream_for(workspace_id=call.workspace_id, name=name)
        call.loop_settings = loop_settings(call.workspace_id)
        if call.upstream is None:
            return None
        if call.upstream.kind == OLLAMA:
            if body.get("raw") is not True:
                cache.world(call.workspace_id)
                call.prepare()
            return call.upstream
        wire.to_tool_specs(body.get("tools"))
        wire.to_response_format(body.get("format"))
        call.thinking = _registry_thinking(name, call.upstream, body)
        if choices > 1:
            cache.world(call.workspace_id)
            call.prepare(model=call.upstream.model, store_image=_image_store(call.workspace_id))
        return call.upstream


def _prepare_in_thread(call: ProxiedCall, body: dict, choices: int) -> Upstream | None:
    with connections_returned():
        return _prepare(call, body, choices)


def _run_registry(call: ProxiedCall, body: dict, kind: str, loop, chunks: asyncio.Queue, cancelled,
                  index: int = 0) -> None:
    """Stream a registry model's answer (choice `index`) into `chunks`, the whole completion last; a
    client gone abandons the call at its next chunk. The middleware runs inside `fathom.llm.complete`,
    unless the proxy ran it already (`call.request`: several choices), when the calls go without it."""
    put = lambda item: loop.call_soon_threadsafe(chunks.put_nowait, item)  # noqa: E731

    def relay(chunk: StreamChunk) -> None:
        if cancelled.is_set():
            raise _ClientGone
        put(chunk)

    with session_context(call.session), connections_returned(), call_notes_context(call.notes):
        try:
            tools = wire.to_tool_specs(body.get("tools"))
            response_format = wire.to_response_format(body.get("format"))
            if call.request is not None:
                options = _registry_options(wire.choice_options(call.request.options, index))
                try:
                    completion = llm_client.complete(
                        workspace=call.workspace_id, role="proxy", messages=call.request.messages, tools=tools,
                        response_format=response_format, model=call.upstream.model, stream=relay,
                        fresh_context=True, actor_id="festinger:proxy", call_id=f"{call.call_id}-{index}", **options,
                        **call.thinking)
                except _ClientGone:
                    return
                put(StreamChunk(completion=completion))
                return
            messages = wire.to_messages(call.raw_messages, store_image=_image_store(call.workspace_id))
            with span("festinger.proxy.call", workspace=call.workspace_id, actor_id="festinger:proxy",
                      call_id=call.call_id) as trace:
                trace.set(model=call.upstream.name, upstream=call.upstream.kind, target=call.upstream.target,
                          endpoint=kind)
                try:
                    completion = llm_client.complete(
                        workspace=call.workspace_id, role="proxy", messages=messages, tools=tools,
                        response_format=response_format, model=call.upstream.model, stream=relay,
                        **_registry_options(call.options), **call.thinking)
                except _ClientGone:
                    trace.set(cancelled=True)
                    return
                put(StreamChunk(completion=completion))
                trace.set(**{k: v for k, v in call.notes.items() if v is not None})
        except Exception as exc:  # noqa: BLE001 - handed to the response, which answers it
            put(exc if isinstance(exc, LLMError | WireError) else WireError(500, f"the model call failed: {exc}"))


def _registry_thinking(name: str, upstream: Upstream, body: dict) -> dict:
    """The options that make a registry model think as Ollama's `think` asks; Ollama's 400 when its
    provider's models cannot think."""
    level = wire.think_level(body)
    if level is None:
        return {}
    options = thinking_options(upstream.model.provider, level)
    if options is None:
        raise wire.cannot_think(name)
    return options


def _registry_options(options: dict) -> dict:
    """Ollama's options under the names `complete` takes (those a registry model understands)."""
    return {_REGISTRY_OPTIONS[k]: v for k, v in options.items() if k in _REGISTRY_OPTIONS}


class _ClientGone(Exception):
    """Raised from the stream callback when the client has disconnected: abandons the model call."""


def _image_store(workspace_id: int):
    """Base64 image -> an ImageRef of the lake's copy (registry providers read images by hash)."""
    store = import_string(settings.FATHOM_MEDIA_STORE)
    workspace = Workspace(pk=workspace_id)

    def keep(image) -> ImageRef:
        try:
            row, _ = store(workspace=workspace, data=wire.image_bytes(image))
        except ApplicationError as exc:
            raise WireError(exc.status_code if 400 <= exc.status_code < 500 else 400, f"invalid image: {exc}") from None
        return ImageRef(row.hash, getattr(row, "media_type", "image/png"))

    return keep


def _sent(sends: list) -> None:
    for send in sends:
        send()


def _outcomes_send(finished: list[tuple]) -> None:
    outcomes_send([call.outcome(completion, kind, stream_cut) for call, completion, kind, stream_cut in finished])


def _stream_cut_later(call: ProxiedCall, completion: Completion, unit: str) -> None:
    """A registry answer cut for repeating itself: the loop guard counts it like any other answer (on
    the memory queue)."""
    signature(STREAM_CUT_TASK).apply_async((call.workspace_id, call.session, completion.to_dict(), unit,
                                            call.upstream.name), ignore_result=True)


def _said(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _error_message(data: bytes) -> str:
    try:
        return str(json.loads(data).get("error") or data.decode(errors="replace"))
    except (ValueError, AttributeError):
        return data.decode(errors="replace")[:500]


def _logged(function):
    def run(*args):
        try:
            function(*args)
        except Exception:
            log.exception("festinger proxy: the work after a response failed")
    return run


_ROUTES = {
    "/": (("GET",), ProxyApp.root),
    "/api/version": (("GET",), ProxyApp.version),
    "/api/tags": (("GET",), ProxyApp.tags),
    "/api/ps": (("GET",), ProxyApp.ps),
    "/api/show": (("POST",), ProxyApp.show),
    "/api/chat": (("POST",), ProxyApp.chat),
    "/api/generate": (("POST",), ProxyApp.generate),
    "/api/embed": (("POST",), ProxyApp.embed),
    "/api/embeddings": (("POST",), ProxyApp.embed),
    "/v1/chat/completions": (("POST",), ProxyApp.openai_chat),
    "/v1/embeddings": (("POST",), ProxyApp.openai_embeddings),
    "/v1/models": (("GET",), ProxyApp.openai_models),
}
