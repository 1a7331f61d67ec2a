"""One HTTP exchange of the proxy, on plain ASGI: the request (path, headers, a body bounded as the
API's, FATHOM_API_MAX_BODY_BYTES) and the response written to it (`respond` whole, or `start` /
`write` / `end` streamed; `error` in the client's dialect), and the one way to notice a client that leaves: `cancelled_when_client_leaves`, under which the client
leaving cancels the task (the upstream request or model call it awaits goes with it) and raises
ClientGone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from django.conf import settings

from fathom.api.parsers import body_too_large_message
from festinger.proxy import wire
from festinger.proxy.wire import OpenAIError, WireError

JSON = b"application/json; charset=utf-8"


class ClientGone(Exception):
    """The client closed the connection."""


class Request:
    __slots__ = ("scope", "receive", "send", "path", "method", "workspace_id", "started", "envelope", "headers",
                 "_disconnected")

    def __init__(self, scope, receive, send, path, *, envelope: bool = False):
        self.scope, self.receive, self.send, self.path = scope, receive, send, path
        self.method = scope["method"]
        self.workspace_id = None
        self.started = False  # the response's status line is out: an error now ends the body instead
        self.envelope = envelope  # errors in the API's envelope (the main port's mount), else the client's API's
        self.headers: list[tuple[bytes, bytes]] = []  # added to the response's (CORS, for an allowed Origin)
        self._disconnected: asyncio.Future | None = None

    def bearer(self) -> str:
        """The secret of the request's `Authorization: Bearer ...`, "" without one."""
        return bearer_of(self.scope)

    def header(self, name: bytes) -> str | None:
        for key, value in self.scope["headers"]:
            if key == name:
                return value.decode("latin-1")
        return None

    async def body(self) -> bytes:
        """The whole body, or a 413 as soon as it is known to be longer than the API's limit
        (FATHOM_API_MAX_BODY_BYTES): from its Content-Length, else while it comes in."""
        limit = settings.FATHOM_API_MAX_BODY_BYTES
        declared = self.header(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise WireError(413, body_too_large_message())
        chunks, size = [], 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ClientGone()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise WireError(413, body_too_large_message())
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def start(self, status: int, content_type: bytes) -> None:
        self.started = True
        await self.send({"type": "http.response.start", "status": status,
                         "headers": [(b"content-type", content_type), *self.headers]})

    async def write(self, data: bytes) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": True})

    async def end(self, data: bytes = b"") -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": False})

    async def respond(self, status: int, data: bytes, *, content_type: bytes = JSON) -> None:
        await self.send({"type": "http.response.start", "status": status,
                         "headers": [(b"content-type", content_type), (b"content-length", str(len(data)).encode()),
                                     *self.headers]})
        self.started = True
        await self.end(data if self.method != "HEAD" else b"")

    async def json(self, status: int, obj) -> None:
        await self.respond(status, json.dumps(obj).encode())

    async def error(self, exc: WireError) -> None:
        if self.started:
            return
        openai = isinstance(exc, OpenAIError) or self.path.startswith("/v1/")
        if self.envelope:
            await self.json(exc.status, wire.envelope_error(exc, openai=openai))
        elif openai:
            await self.json(exc.status, wire.openai_error(exc.status, exc.message, param=exc.param, code=exc.code))
        elif exc.status in (404, 405) and exc.message.startswith(str(exc.status)):
            await self.respond(exc.status, exc.message.encode(), content_type=b"text/plain")
        else:
            await self.json(exc.status, {"error": exc.message})

    @asynccontextmanager
    async def cancelled_when_client_leaves(self) -> AsyncIterator[None]:
        """Meanwhile, the client leaving cancels the current task: what it awaits (an Ollama upstream's
        response, a registry model's next chunk) is cancelled with it, and the block raises ClientGone.
        A cancellation from anywhere else goes on as it came (`Task.uncancel` tells them apart)."""
        task, inside, left = asyncio.current_task(), True, False

        def leave(_gone) -> None:
            nonlocal left
            if inside:  # (a callback already scheduled when the block ended cancels nothing)
                left = True
                task.cancel()

        gone = self._disconnected_future()
        gone.add_done_callback(leave)
        try:
            yield
        except asyncio.CancelledError:
            if left and task.uncancel() == 0:
                raise ClientGone() from None
            raise
        finally:
            inside = False
            gone.remove_done_callback(leave)

    def _disconnected_future(self) -> asyncio.Future:
        """Resolves when the client goes away (the request body has been read already)."""
        if self._disconnected is None:
            async def watch():
                while True:
                    message = await self.receive()
                    if message["type"] == "http.disconnect":
                        return
            self._disconnected = asyncio.ensure_future(watch())
        return self._disconnected


def bearer_of(scope) -> str:
    """The secret of an ASGI request's `Authorization: Bearer ...`, "" without one."""
    for key, value in scope.get("headers", ()):
        if key == b"authorization":
            scheme, _, secret = value.decode("latin-1").partition(" ")
            return secret.strip() if scheme.lower() == "bearer" else ""
    return ""
