"""A local model server speaking the OpenAI chat-completions wire protocol, for fires run by real
worker processes (the real `openai` SDK of the `openai-compatible` provider talks to it). It answers
from a queue, and a `stall()` entry holds its request open until the test releases it, so a test
can act (kill the worker, cancel the fire, send a message) while a fire is known to be mid-call.

    server = ModelServer().start()
    server.answer(tool_calls=[("semantic", {"query": "rover"})])   # the next request
    server.stall()                                                  # the one after: held open
    server.answer(tool_calls=[("respond", {"body": "..."})])
    server.stalled.wait(30); ...; server.release()
    server.answer(..., hold=True)                                   # held open, then answered
    server.requests                                                 # every request body, in order
"""

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STALL = object()


class ModelServer:
    def __init__(self, *, stall_seconds: float = 120):
        self.queue: list = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.stalled = threading.Event()  # a stalled request arrived
        self.released = threading.Event()
        self.stall_seconds = stall_seconds
        self._ids = itertools.count(1)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                with server.lock:
                    server.requests.append(body)
                    item = server.queue.pop(0) if server.queue else None
                if item is STALL or (isinstance(item, dict) and item.pop("hold", False)):
                    server.stalled.set()
                    server.released.wait(server.stall_seconds)
                    if item is STALL:
                        self.close_connection = True  # the caller is gone (killed) or must retry
                        return
                if item is None:
                    self._send(500, {"error": {"message": "the test queued no answer", "type": "server_error"}})
                else:
                    self._send(200, item)

            def _send(self, status, payload):
                raw = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, text: str = "", *, tool_calls=(), hold: bool = False):
        """Queue a completion: text, and tool calls given as (name, arguments) or (name, arguments, id).
        With `hold`, the request is held open until `release()`, then answered."""
        calls = []
        for call in tool_calls:
            name, arguments, *given = call
            calls.append({"id": given[0] if given else f"call_{next(self._ids)}", "type": "function",
                          "function": {"name": name, "arguments": json.dumps(arguments)}})
        message = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        self.queue.append({
            "id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": 1, "model": "wire-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}, "hold": hold})
        return self

    def stall(self):
        """The next request is held open until `release()` (or the stall times out), then dropped."""
        self.queue.append(STALL)
        return self

    def release(self):
        self.released.set()

    def tool_names(self, index: int) -> list[str]:
        """Names of the tools offered in request `index`."""
        return [tool["function"]["name"] for tool in self.requests[index].get("tools", [])]
