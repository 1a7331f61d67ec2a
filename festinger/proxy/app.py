"""The proxy's routes as a plain ASGI app: Ollama's API and OpenAI's chat completions for one workspace.

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

An Ollama upstream's bytes reach the client as they come (festinger/proxy/relay.py); a client that goes
away cancels the upstream request or the registry model's call (`Request.cancelled_when_client_leaves`).
The middleware's `before` runs once before the upstream call: on the event loop when the caches it reads
hold what it needs, else in a thread (festinger/proxy/threads.py `prepare_from_memory`, `prepare`); the
seen marks it sends (which messages are new to the conversation:
festinger.learning.SeenMarks) are read once the upstream's first piece is out, so that their round trip
overlaps the upstream's; the loop guard counts the answer into its conversation as its last bytes go
out (`AnswerCount`: a cut before them, any other answer in a thread after them), and the conversation's
next turn waits for that count on its way in; after the client has its last byte, one message to the
memory queue hands the rest (`after`, the trace) to a worker.

Ollama's `think` is passed to an Ollama upstream untouched; a registry model is sent its provider's
option for it (`fathom.llm.providers.thinking_options`), or the request is Ollama's 400 when the model
cannot think, and its thinking is written as Ollama's `thinking` (OpenAI's `reasoning_content`) before
its answer, watched for a loop as the answer is.

The other parts: `request.py` (the HTTP exchange), `wire.py` (parsing and validating the requests, the
shapes of the answers), `ollama_writer.py` / `openai_writer.py` (the NDJSON and SSE writers),
`relay.py` (an Ollama upstream's answer relayed), `threads.py` (the work done in threads)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import aiohttp

from fathom.channels import from_memory
from fathom.llm.errors import LLMError
from fathom.llm.providers import thinking_options
from fathom.llm.registry import ollama_base
from fathom.llm.types import Completion
from fathom.threads import in_thread
from festinger.loops.conversations import ConversationName, conversation_name
from festinger.loops.guard import StreamRepetition
from festinger.proxy import threads, wire
from festinger.proxy.admission import Admission
from festinger.proxy.calls import ProxiedCall
from festinger.proxy.ollama_writer import ChatWriter, GenerateWriter
from festinger.proxy.openai_writer import OpenAIWriter
from festinger.proxy.relay import (
    JSON_HEADERS,
    UPSTREAM_ERRORS,
    Assembler,
    error_message,
    ollama_relay,
    registry_relay,
    said,
)
from festinger.proxy.request import JSON, ClientGone, Request
from festinger.proxy.upstreams import OLLAMA, Upstream, registry_names, upstream_for
from festinger.proxy.wire import OpenAIError, WireError

log = logging.getLogger(__name__)

SESSION_HEADER = b"x-festinger-session"

# Finished calls go to the memory queue together: a publish costs the proxy about 0.6 ms of CPU, more
# than the rest of a call's work, so one message carries the calls finished within FINISH_BATCH_SECONDS,
# up to FINISH_BATCH_MAX calls or FINISH_BATCH_CHARS characters of their messages (encoding a message
# holds the interpreter: a big one would stall the requests meanwhile).
FINISH_BATCH_SECONDS = 0.2
FINISH_BATCH_MAX = 50
FINISH_BATCH_CHARS = 200_000

Resolver = Callable[[dict], Awaitable[int | None]]
_SHORT = aiohttp.ClientTimeout(total=5)
_PASSED = aiohttp.ClientTimeout(total=120)


class ProxyApp:
    """The proxy for the workspace that `workspace_of(scope)` names (None: 401), to the requests
    `admission` lets in. `prefix` is stripped from paths (the mount under the main port)."""

    def __init__(self, *, workspace_of: Resolver, admission: Admission, prefix: str = "", envelope: bool = False,
                 keyed: bool = False, threads: int = 64):
        self.workspace_of = workspace_of
        self.admission = admission
        self.prefix = prefix
        self.envelope = envelope  # errors in the API's envelope (the main port's mount)
        self.keyed = keyed  # every caller has a key of its own (the mount's API keys): its conversations are its own
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="festinger-proxy")
        self._client: aiohttp.ClientSession | None = None
        self._background: set[asyncio.Task] = set()
        self._finished: list[tuple] = []
        self._finished_chars = 0
        self._counting: dict[tuple[int, str], asyncio.Task] = {}  # (workspace, conversation): its answer's count

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
        request = Request(scope, receive, send, path, envelope=self.envelope)
        try:
            if refusal := self.admission.refusal(request):
                raise refusal
            if self.admission.preflight(request):
                await request.respond(204, b"")
                return
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
        except ClientGone:
            pass
        except Exception:  # a fault of ours: said in the client's shape, its details only in the log
            log.exception("festinger proxy: %s %s failed", request.method, request.path)
            await request.error(WireError(500, "the proxy failed to answer this request (its log says why)"))

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

    def in_thread(self, function, *args, **kwargs) -> asyncio.Task:
        """`function` on one of the proxy's threads (`fathom.threads.in_thread`), started whether or not
        the caller awaits it."""
        return asyncio.ensure_future(in_thread(function, executor=self.executor)(*args, **kwargs))

    def after_response(self, function, *args) -> None:
        """Run `function` (a publish to the memory queue) in a thread once the response is out, never
        delaying it (T33)."""
        task = asyncio.ensure_future(self.in_thread(threads.logged(function), *args))
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

    def counter(self, call: ProxiedCall) -> AnswerCount:
        """How the loop guard counts the call's answer once it is whole (`AnswerCount`)."""
        return AnswerCount(self, call)

    def count_soon(self, call: ProxiedCall, completion: Completion, cut: str | None) -> asyncio.Task:
        """Count a followed conversation's answer in a thread from the event loop's next turn on (once
        what the caller writes now is out), known to the conversation's next turn until it is done."""
        key = (call.workspace_id, call.conversation.name)

        async def count() -> None:
            await self.in_thread(threads.logged(threads.answer_count), call, completion, cut)

        task = self._counting[key] = asyncio.ensure_future(count())
        task.add_done_callback(lambda done: self._counting.pop(key) if self._counting.get(key) is done else None)
        return task

    async def counted(self, workspace_id: int, conversation: ConversationName) -> None:
        """The conversation's last answer counted into its state, when this process is counting it still
        (its next turn meets that state on its way in)."""
        counting = self._counting.get((workspace_id, conversation.name))
        if counting is not None:
            await asyncio.shield(counting)

    def queued_send(self, call: ProxiedCall) -> None:
        """What the call's recollection queued (cues, writes) goes out now, whatever the upstream answered."""
        if call.sends:
            self.after_response(threads.sends_run, call.sends)

    def _finished_send(self) -> None:
        if self._finished:
            finished, self._finished, self._finished_chars = self._finished, [], 0
            self.after_response(threads.outcomes_queue, finished)

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
        for name, family in await self.in_thread(registry_names, workspace_id=request.workspace_id):
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
        upstream = await self.in_thread(upstream_for, workspace_id=request.workspace_id, name=name)
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
        if request.path == "/api/embeddings":
            texts, dimensions = wire.embedding_prompt(body), 0
        else:
            texts, dimensions = wire.embed_inputs(body), wire.embed_dimensions(body)
        upstream = await self.in_thread(upstream_for, workspace_id=request.workspace_id, name=name)
        if upstream is None:
            raise wire.model_not_found(name)
        if upstream.kind == OLLAMA:
            await self._pass_through(request, request.path, {**body, "model": upstream.target})
            return
        if request.path == "/api/embeddings":
            vectors, _ = await self.in_thread(threads.registry_embeddings, request.workspace_id, upstream, texts)
            await request.json(200, {"embedding": vectors[0] if vectors else []})
            return
        started = time.perf_counter()
        vectors, tokens = await self.in_thread(threads.registry_embeddings, request.workspace_id, upstream, texts)
        await request.json(200, wire.embed_answer(name, wire.shortened(vectors, dimensions), tokens, started))

    async def openai_embeddings(self, request):
        """OpenAI's /v1/embeddings, from an Ollama upstream's /api/embed or a registry model."""
        body = wire.json_body(await request.body())
        name = wire.model_name(body)
        texts, dimensions, encoding = wire.openai_embedding_request(body)
        upstream = await self.in_thread(upstream_for, workspace_id=request.workspace_id, name=name)
        if upstream is None:
            raise wire.model_not_found(name)
        if upstream.kind == OLLAMA:
            vectors, tokens = await self._ollama_embeddings(upstream.target, texts, dimensions)
        else:
            vectors, tokens = await self.in_thread(threads.registry_embeddings, request.workspace_id, upstream, texts)
            vectors = wire.shortened(vectors, dimensions)
        await request.json(200, wire.openai_embedding_list(name, vectors, tokens, encoding))

    async def _ollama_embeddings(self, model: str, texts: list[str], dimensions: int) -> tuple[list, int]:
        body = {"model": model, "input": texts, **({"dimensions": dimensions} if dimensions else {})}
        status, content = await self._ollama_post("/api/embed", body)
        if status != 200:
            raise WireError(status, error_message(content))
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
                                        headers=JSON_HEADERS, timeout=_PASSED) as answer:
                return answer.status, await answer.read()
        except UPSTREAM_ERRORS as exc:
            raise WireError(502, f"the Ollama upstream did not answer: {said(exc)}") from None

    # --- chat and generate -----------------------------------------------------------------------------

    async def chat(self, request):
        body = wire.json_body(await request.body())
        wire.ollama_request_check(body)
        await self.converse(request, body, kind="chat")

    async def generate(self, request):
        body = wire.json_body(await request.body())
        wire.ollama_request_check(body)
        await self.converse(request, body, kind="generate")

    async def converse(self, request, body: dict, *, kind: str, answer_as=None, user: str | None = None) -> None:
        """Answer an /api/chat or /api/generate body (`answer_as`: another API's writer of the chunks;
        `user`: OpenAI's, which names the conversation as X-Festinger-Session does)."""
        name = wire.model_name(body)
        options = wire.options_of(body)
        if kind == "chat":
            raw_messages = wire.chat_messages(body)
        else:
            raw_messages = wire.generate_messages(body)
            if not raw_messages:  # Ollama loads the model and answers done at once
                upstream = await self.in_thread(upstream_for, workspace_id=request.workspace_id, name=name)
                if upstream is None:
                    raise wire.model_not_found(name)
                await request.json(200, {"model": name, "created_at": wire.created_at(), "response": "",
                                         "done": True, "done_reason": "load"})
                return
        stream = body.get("stream", True) is not False
        conversation = conversation_name(caller=request.bearer() if self.keyed else "", user=user,
                                         session=request.header(SESSION_HEADER), messages=raw_messages)
        writer = answer_as or (ChatWriter if kind == "chat" else GenerateWriter)(request, name, stream)
        call = ProxiedCall(workspace_id=request.workspace_id, upstream=None, raw_messages=raw_messages,
                           conversation=conversation, options=options)
        if conversation.followed:
            await self.counted(request.workspace_id, conversation)
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
                call.learn()  # (when the upstream never answered) the seen marks are read whatever happened
            finally:
                self.queued_send(call)

    async def prepared(self, call: ProxiedCall, body: dict, choices: int) -> Upstream | None:
        """The middleware's way in: on the event loop when what it reads is in this process's memory (a
        thread's round trip would be a fifth of the latency the proxy adds, tests/bench/bench_proxy.py),
        else in a thread, which reads the database (a cancelled request's thread goes on, and what it
        marked seen is read once it is done)."""
        if threads.prepare_from_memory(call, body, choices):
            return call.upstream
        prepared = self.in_thread(threads.prepare, call, body, choices)
        try:
            return await prepared
        except asyncio.CancelledError:
            prepared.add_done_callback(lambda _done: call.learn())
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
        # The seen marks' answer is read once the upstream's first piece arrived, at the relay's next wait:
        # after that piece went out, so the marks' round trip overlaps the upstream's and delays nothing.
        learn_soon = lambda: asyncio.get_running_loop().call_soon(call.learn)  # noqa: E731

        counted = self.counter(call)

        async def relay(index: int, choice) -> tuple[Completion | None, str | None]:
            watcher = Assembler(kind, StreamRepetition(call.loop_settings),
                                streamed=forwarded.get("stream", True) is not False)
            sent = dict(forwarded, options=wire.choice_options(forwarded.get("options") or {}, index)) \
                if index else forwarded
            try:
                async with request.cancelled_when_client_leaves():
                    cut = await ollama_relay(request, self.client, url, sent, watcher, choice, answered=learn_soon,
                                             whole=counted if index == 0 else None)
            except ClientGone:  # cancelling the relay closed the upstream response: Ollama stops generating
                return None, None
            return watcher.completion, cut

        completion, cut = await _each_choice(request, writer, relay)
        call.learn()  # (a whole answer: its marks are read here, once it is out) before its outcome is queued
        await counted.done()  # the outcome carries what the count found
        if completion is not None and call.request is not None:  # (a raw prompt skips the middleware)
            self.finished(call, completion, kind, cut)

    async def _from_registry(self, request, body: dict, call: ProxiedCall, *, kind: str, writer) -> None:
        started = time.perf_counter()
        call.learn()  # (several choices: the middleware ran in `threads.prepare`)
        if call.answer is not None:  # (several choices) the loop breaker answered
            await _breaker_answers(writer, call.answer, started)
            self.finished(call, call.answer, kind)
            return

        counted = self.counter(call)

        async def answer(index: int, choice) -> tuple[Completion | None, str | None]:
            return await self._registry_choice(request, body, call, kind, choice, index, started,
                                               counted if index == 0 else None)

        completion, cut = await _each_choice(request, writer, answer)
        await counted.done()
        if call.request is not None and completion is not None:  # several choices: the middleware ran here,
            self.finished(call, completion, kind, cut)              # its `after` sees the first

    async def _registry_choice(self, request, body: dict, call: ProxiedCall, kind: str, writer, index: int,
                               started: float, counted: AnswerCount | None) -> tuple[Completion | None, str | None]:
        """One answer of a registry model, streamed to `writer`: (its completion, the repeating piece if
        the loop guard cut it); (None, None) when the client went away."""
        stream = threads.RegistryStream(self.in_thread, call, body, kind, index)
        try:
            async with request.cancelled_when_client_leaves():
                return await registry_relay(stream, writer, call.upstream.target, call.loop_settings, started,
                                            whole=counted)
        except ClientGone:
            return None, None
        finally:
            stream.abandon()

    async def openai_chat(self, request):
        """OpenAI's chat completions (errors in OpenAI's shape: the path says so); `n` choices are `n`
        upstream calls at once, around one pass of the middleware (festinger.proxy.openai_writer)."""
        body = wire.json_body(await request.body())
        wire.openai_request_check(body)
        ollama = wire.openai_to_ollama(body)
        if not isinstance(ollama.get("model"), str) or not ollama["model"]:
            raise OpenAIError(400, "model is required")
        writer = OpenAIWriter(request, ollama["model"], ollama["stream"], choices=wire.openai_choices(body),
                              include_usage=bool((body.get("stream_options") or {}).get("include_usage")))
        await self.converse(request, ollama, kind="chat", answer_as=writer, user=body.get("user"))

    async def openai_models(self, request):
        names = [entry["name"] for entry in await self._ollama_models("/api/tags")]
        names += [name for name, _ in await self.in_thread(registry_names, workspace_id=request.workspace_id) if name not in names]
        await request.json(200, {"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "fathom"} for name in names]})


class AnswerCount:
    """The loop guard's count of one call's answer, awaited once the answer is whole (relay.py's `Whole`).
    A cut is a detection: counted before the answer's last bytes go out. Any other answer is counted in a
    thread started once they are out (the task runs at the event loop's next turn, after the relay wrote
    them), so its Redis round trip delays no byte; the conversation's next turn in this process waits for
    it (`ProxyApp.counted`), and so does the call's outcome (`done`). A one-shot request's answer needs no
    round trip (no state is kept for it): counted here. A registry model's call ran the middleware itself:
    only its cut, which that middleware never saw, is counted."""

    def __init__(self, app: ProxyApp, call: ProxiedCall):
        self.app, self.call = app, call
        self.task: asyncio.Task | None = None

    async def __call__(self, completion: Completion, cut: str | None) -> None:
        call = self.call
        if call.request is None:
            if cut is not None:
                await self.app.in_thread(threads.stream_cut_count, call, completion, cut)
            return
        if not call.conversation.followed:
            with from_memory():
                call.observe(completion, cut)
            return
        self.task = self.app.count_soon(call, completion, cut)
        if cut is not None:
            await self.task

    async def done(self) -> None:
        if self.task is not None:
            await asyncio.shield(self.task)


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
        if not request.started:
            raise
        await writer.fail(exc.message)
        return None, None


async def _breaker_answers(writer, answer: Completion, started: float) -> None:
    for choice in writer.choices:
        await choice.whole(answer, started, reason=wire.LOOP_DONE_REASON)


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
