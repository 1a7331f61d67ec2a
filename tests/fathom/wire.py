"""A local HTTP server speaking a model provider's wire protocol, so the real SDKs are exercised, in
this process or in a worker process.

    server.respond(200, {...})                 # next request gets this JSON
    server.respond(429, {...}, headers={"Retry-After": "1"})
    server.respond_stream([("message_start", {...}), ...])   # server-sent events (event name or None)
    server.respond_stream(events, pause_after=1)   # written one by one; after the first, wait for server.resume()
    server.always(500, {...})                  # once the queue is empty, every request gets this
    server.answer("text", tool_calls=[("semantic", {"query": "rover"})])   # an OpenAI chat completion
                                               # (streamed as chat completion chunks when the request asks)
    server.answer(..., hold=True)              # held open until server.release(), then answered
    server.stall()                             # held open until server.release(), then dropped
    server.stalled.wait(30)                    # a held request has arrived
    server.requests                            # [(method, path, headers, json body), ...]
    server.bodies                              # [json body, ...]
"""

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fathom.llm.services import model_assign, model_create


@dataclass
class Reply:
    status: int = 200
    body: object = None
    headers: dict = field(default_factory=dict)
    events: list | None = None  # server-sent events instead of a JSON body
    pause_after: int | None = None  # stream: after this many events, wait for resume() before the rest
    hold: bool = False  # held open until release() (or hold_seconds)
    drop: bool = False  # then the connection is closed without an answer


class WireServer:
    def __init__(self, *, hold_seconds: float = 120):
        self.queue: list[Reply] = []
        self.fallback: Reply | None = None
        self.requests = []
        self.lock = threading.Lock()
        self.stalled = threading.Event()  # a held request arrived
        self.released = threading.Event()
        self.resumed = threading.Event()
        self.hold_seconds = hold_seconds
        self._ids = itertools.count(1)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                with server.lock:
                    server.requests.append(("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"null")))
                    reply = server.queue.pop(0) if server.queue else server.fallback
                if reply is None:
                    reply = Reply(500, {"error": {"message": "the test queued no response", "type": "server_error"}})
                if reply.hold:
                    server.stalled.set()
                    server.released.wait(server.hold_seconds)
                if reply.drop:
                    self.close_connection = True  # the caller is gone (killed) or must retry
                    return
                body = server.requests[-1][3]
                if reply.events is None and isinstance(body, dict) and body.get("stream") and \
                        isinstance(reply.body, dict) and reply.body.get("object") == "chat.completion":
                    reply = Reply(reply.status, None, reply.headers, chat_events(reply.body))  # asked to stream
                if reply.events is not None and reply.pause_after is not None:
                    server._stream(self, reply)
                    return
                if reply.events is not None:
                    payload = b"".join(_sse(name, data) for name, data in reply.events)
                    content_type = "text/event-stream"
                else:
                    payload = json.dumps(reply.body).encode()
                    content_type = "application/json"
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the caller hung up (a killed worker, a timeout)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def _stream(self, handler, reply: Reply) -> None:
        """Server-sent events written and flushed one at a time (no Content-Length: the connection
        closes at the end), pausing after `reply.pause_after` of them until `resume()`."""
        handler.close_connection = True
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Connection", "close")
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            for index, (name, data) in enumerate(reply.events):
                if index == reply.pause_after and not self.resumed.wait(self.hold_seconds):
                    return  # never resumed: the rest is not sent, and the caller sees a broken stream
                handler.wfile.write(_sse(name, data))
                handler.wfile.flush()
        except OSError:
            pass

    def resume(self):
        self.resumed.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def respond(self, status=200, body=None, headers=None, *, hold: bool = False):
        self.queue.append(Reply(status, body, headers or {}, hold=hold))
        return self

    def respond_stream(self, events, headers=None, *, pause_after: int | None = None):
        self.queue.append(Reply(200, None, headers or {}, events, pause_after=pause_after))
        return self

    def always(self, status, body, headers=None):
        self.fallback = Reply(status, body, headers or {})
        return self

    def answer(self, text: str = "", *, tool_calls=(), hold: bool = False):
        """Queue an OpenAI chat completion: text, and tool calls given as (name, arguments) or
        (name, arguments, id)."""
        calls = []
        for call in tool_calls:
            name, arguments, *given = call
            calls.append({"id": given[0] if given else f"call_{next(self._ids)}", "type": "function",
                          "function": {"name": name, "arguments": json.dumps(arguments)}})
        message = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        return self.respond(200, {
            "id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": 1, "model": "wire-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}, hold=hold)

    def stall(self):
        """The next request is held open until `release()` (or `hold_seconds`), then dropped."""
        self.queue.append(Reply(hold=True, drop=True))
        return self

    def release(self):
        self.released.set()

    @property
    def bodies(self):
        return [body for _, _, _, body in self.requests]


def _sse(name, data) -> bytes:
    return ((f"event: {name}\n" if name else "") + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n").encode()


# --- Using it from a workspace, and the bodies each provider answers with --------------------------------------

KEY = "sk-wire-test-0123456789abcdefKEYS"


def use(workspace, provider, base_url, model="test-model", api_key=KEY, api="chat_completions"):
    row = model_create(workspace=workspace, name=f"{provider}-{api.replace('_', '-')}-wire", provider=provider, model=model,
                       base_url=base_url, api_key=api_key, api=api, input_price_per_mtok=1, output_price_per_mtok=2)
    model_assign(workspace=workspace, role="main", model=row)
    return row


# --- OpenAI wire format --------------------------------------------------------------------------------------

def chat(content="Hello", tool_calls=None, finish="stop", usage=(10, 2, 0)):
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1],
                      "prompt_tokens_details": {"cached_tokens": usage[2]}}}


def chunk(delta=None, finish=None, usage=None):
    body = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
            "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return None, body


def chat_events(completion: dict) -> list:
    """A chat completion as the server-sent events that stream it: the text, each tool call, the
    finish reason, the usage, [DONE]."""
    message, choice = completion["choices"][0]["message"], completion["choices"][0]
    events = [chunk({"role": "assistant", "content": message.get("content") or ""})]
    for index, call in enumerate(message.get("tool_calls") or ()):
        events.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                             "function": call["function"]}]}))
    events.append(chunk({}, finish=choice["finish_reason"]))
    usage = completion.get("usage") or {}
    events.append(chunk(None, usage=(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))))
    return [*events, (None, "[DONE]")]


def openai_error(status, message, kind="error"):
    return status, {"error": {"message": message, "type": kind, "param": None, "code": None}}


# --- OpenAI Responses wire format -----------------------------------------------------------------------------

def response(output, status="completed", usage=(10, 2, 0), incomplete=None):
    """A Responses API response object; `output` items from output_text() and function_call()."""
    return {"id": "resp_1", "object": "response", "created_at": 1, "model": "test-model", "status": status,
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": usage[0] + usage[1],
                      "input_tokens_details": {"cached_tokens": usage[2]},
                      "output_tokens_details": {"reasoning_tokens": 0}}}


def output_text(text, id="msg_1"):
    return {"type": "message", "id": id, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def function_call(name, arguments, call_id="call_r1", id="fc_1"):
    return {"type": "function_call", "id": id, "call_id": call_id, "name": name,
            "arguments": json.dumps(arguments), "status": "completed"}


def response_events(deltas, calls=(), usage=(10, 2, 0)):
    """The server-sent events of a streamed response: text deltas, then each function call's item."""
    text = "".join(deltas)
    output = ([output_text(text)] if text else []) + list(calls)
    started = {**response([], status="in_progress"), "usage": None}
    events = [("response.created", {"type": "response.created", "sequence_number": 0, "response": started})]
    seq = 1
    for delta in deltas:
        events.append(("response.output_text.delta", {
            "type": "response.output_text.delta", "sequence_number": seq, "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "delta": delta, "logprobs": []}))
        seq += 1
    for index, call in enumerate(calls):
        events.append(("response.output_item.done", {"type": "response.output_item.done", "sequence_number": seq,
                                                     "output_index": index + 1, "item": call}))
        seq += 1
    events.append(("response.completed", {"type": "response.completed", "sequence_number": seq,
                                          "response": response(output, usage=usage)}))
    return events


# --- Anthropic wire format -----------------------------------------------------------------------------------

def message(content, stop="end_turn", usage=None):
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": content,
            "stop_reason": stop, "stop_sequence": None,
            "usage": usage or {"input_tokens": 10, "output_tokens": 3}}


def anthropic_error(status, message, kind="api_error"):
    return status, {"type": "error", "error": {"type": kind, "message": message}}
