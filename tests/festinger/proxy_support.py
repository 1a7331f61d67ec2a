"""A fake Ollama (a local HTTP server speaking Ollama's API and NDJSON streaming) and a way to serve
the proxy's ASGI app with uvicorn in a thread, for the proxy's tests and bench.

    ollama = FakeOllama()                       # .url, .requests, .bodies
    ollama.reply_chat("Hello", chunks=3)        # the next /api/chat answers this (streamed or not, as asked)
    ollama.reply_chat("", tool_calls=[{"function": {"name": "ls", "arguments": {"path": "/"}}}])
    ollama.reply_lines([...objects...])         # the next request gets these objects as they are
    ollama.endless("again ")                    # streams this until the client goes away (ollama.closed,
                                                # ollama.streams_closed counts them)
    ollama.always_chat("same answer")           # every chat, once the queue is empty

and `Agent`, a client of the proxy that keeps its history as Agent Zero does.
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import ollama
import uvicorn

from fathom.tracing.models import TraceEvent
from tests.conftest import wait_for

TAGS = {"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest", "modified_at": "2026-01-01T00:00:00Z",
                    "size": 2019393189, "digest": "a80c4f17acd5", "details": {
                        "parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                        "parameter_size": "3.2B", "quantization_level": "Q4_K_M"}}]}


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def stats(prompt: int = 11, evals: int = 7) -> dict:
    return {"total_duration": 5_000_000, "load_duration": 1_000_000, "prompt_eval_count": prompt,
            "prompt_eval_duration": 2_000_000, "eval_count": evals, "eval_duration": 2_500_000}


class FakeOllama:
    def __init__(self):
        self.queue: list = []
        self.fallback = None
        self.requests: list[tuple[str, str, dict]] = []
        self.closed = threading.Event()  # an endless stream's client went away
        self.streams_closed = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                fake._record(self, None)
                if self.path == "/api/tags":
                    self._json(200, TAGS)
                elif self.path == "/api/version":
                    self._json(200, {"version": "0.12.3"})
                elif self.path == "/api/ps":
                    self._json(200, {"models": [{**TAGS["models"][0], "expires_at": "2026-01-01T00:05:00Z",
                                                 "size_vram": 2019393189}]})
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                fake._record(self, body)
                model = (body or {}).get("model")
                if model not in ("llama3.2", "llama3.2:latest", "qwen3:8b"):
                    self._json(404, {"error": f'model "{model}" not found, try pulling it first'})
                    return
                if self.path == "/api/show":
                    self._json(200, {"modelfile": "FROM llama3.2", "parameters": "stop <|eot_id|>",
                                     "template": "{{ .Prompt }}", "details": TAGS["models"][0]["details"],
                                     "model_info": {"general.architecture": "llama"},
                                     "capabilities": ["completion", "tools"]})
                    return
                if self.path == "/api/embed":
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    self._json(200, {"model": model, "embeddings": [[0.1, 0.2, 0.3] for _ in inputs],
                                     "total_duration": 1000, "load_duration": 10, "prompt_eval_count": 3})
                    return
                if self.path == "/api/embeddings":
                    self._json(200, {"embedding": [0.5, 0.25]})
                    return
                with fake.lock:
                    reply = fake.queue.pop(0) if fake.queue else fake.fallback
                if reply is None:
                    self._json(500, {"error": "the test queued no reply"})
                    return
                reply(self, body)

            def _json(self, status, obj):
                payload = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def stream_lines(self, objects, *, pause: float = 0.0):
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for obj in objects:
                    data = json.dumps(obj).encode() + b"\n"
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                    if pause:
                        time.sleep(pause)
                self.wfile.write(b"0\r\n\r\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    @property
    def bodies(self) -> list[dict]:
        return [body for method, path, body in self.requests if method == "POST"]

    def chat_bodies(self) -> list[dict]:
        return [body for method, path, body in self.requests if path in ("/api/chat", "/api/generate")]

    def _record(self, handler, body):
        with self.lock:
            self.requests.append((handler.command, handler.path, body))

    # replies

    def reply(self, function):
        with self.lock:
            self.queue.append(function)
        return self

    def reply_chat(self, text: str = "", *, chunks: int = 3, tool_calls=None, thinking: str = "",
                   done_reason: str = "stop", pause: float = 0.0):
        return self.reply(_answer(text, chunks=chunks, tool_calls=tool_calls, thinking=thinking,
                                  done_reason=done_reason, pause=pause))

    def always_chat(self, text: str = "", **kwargs):
        self.fallback = _answer(text, **kwargs)
        return self

    def reply_lines(self, objects, *, pause: float = 0.0):
        return self.reply(lambda handler, body: handler.stream_lines(objects, pause=pause))

    def endless(self, piece: str, *, pause: float = 0.02):
        fake = self

        def run(handler, body):
            def forever():
                while True:
                    yield {"model": body["model"], "created_at": now(), "message": {"role": "assistant", "content": piece},
                           "done": False}
            try:
                handler.stream_lines(forever(), pause=pause)
            except OSError:
                with fake.lock:
                    fake.streams_closed += 1
                fake.closed.set()
        return self.reply(run)


def _answer(text, *, chunks=3, tool_calls=None, thinking="", done_reason="stop", pause=0.0):
    def run(handler, body):
        model = body["model"]
        generate = handler.path == "/api/generate"
        if body.get("stream", True) is False:
            obj = {"model": model, "created_at": now(), "done": True, "done_reason": done_reason, **stats()}
            if generate:
                obj.update(response=text, context=[1, 2, 3])
                if thinking:
                    obj["thinking"] = thinking
            else:
                message = {"role": "assistant", "content": text}
                if thinking:
                    message["thinking"] = thinking
                if tool_calls:
                    message["tool_calls"] = tool_calls
                obj["message"] = message
            handler._json(200, obj)
            return
        size = max(1, -(-len(text) // chunks)) if text else 1
        pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
        objects = []
        for index, piece in enumerate(pieces):
            if generate:
                objects.append({"model": model, "created_at": now(), "response": piece, "done": False})
            else:
                message = {"role": "assistant", "content": piece}
                if thinking and index == 0:
                    message["thinking"] = thinking
                objects.append({"model": model, "created_at": now(), "message": message, "done": False})
        if tool_calls and not generate:
            objects.append({"model": model, "created_at": now(), "done": False,
                            "message": {"role": "assistant", "content": "", "tool_calls": tool_calls}})
        final = {"model": model, "created_at": now(), "done": True, "done_reason": done_reason, **stats()}
        if generate:
            final.update(response="", context=[1, 2, 3])
        else:
            final["message"] = {"role": "assistant", "content": ""}
        objects.append(final)
        handler.stream_lines(objects, pause=pause)
    return run


@contextmanager
def serving(app):
    """Serve the ASGI `app` on a free loopback port in a thread; yields its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the proxy did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def finished_calls(workspace) -> int:
    """The proxied calls of the workspace whose work after the response (middleware, trace) is done."""
    return TraceEvent.objects.filter(workspace=workspace, kind="festinger.proxy.call.completed").count()


class Agent:
    """An agent that keeps its history and sends it every turn, as Agent Zero does."""

    def __init__(self, url, workspace, session, *, task: str = "Find the quarterly report."):
        self.client = ollama.Client(host=url, headers={"X-Festinger-Session": session})
        self.workspace = workspace
        self.history = [{"role": "system", "content": "You are a file agent."},
                        {"role": "user", "content": task}]

    def turn(self, **kwargs):
        before = finished_calls(self.workspace)
        answer = self.client.chat(model="llama3.2", messages=list(self.history), **kwargs)
        wait_for(lambda: finished_calls(self.workspace) > before)  # the work after the response is done
        self.history += [{"role": "assistant", "content": answer.message.content,
                          **({"tool_calls": [c.model_dump() for c in answer.message.tool_calls]}
                             if answer.message.tool_calls else {})},
                         {"role": "user", "content": "That did not work. Go on."}]
        return answer
