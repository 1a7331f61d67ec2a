"""A local HTTP server speaking a model provider's wire protocol, so the real SDKs are exercised.

    server.respond(200, {...})                 # next request gets this JSON
    server.respond(429, {...}, headers={"Retry-After": "1"})
    server.respond_stream([("message_start", {...}), ...])   # server-sent events (event name or None)
    server.always(500, {...})                  # once the queue is empty, every request gets this
    server.requests                            # [(method, path, headers, json body), ...]
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class WireServer:
    def __init__(self):
        self.queue = []
        self.fallback = None
        self.requests = []
        self.lock = threading.Lock()
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
                    reply = (500, {"error": {"message": "the test queued no response"}}, {}, None)
                status, body, headers, events = reply
                if events is not None:
                    payload = "".join(
                        (f"event: {name}\n" if name else "") + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
                        for name, data in events).encode()
                    content_type = "text/event-stream"
                else:
                    payload = json.dumps(body).encode()
                    content_type = "application/json"
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def respond(self, status=200, body=None, headers=None):
        self.queue.append((status, body, headers or {}, None))
        return self

    def respond_stream(self, events, headers=None):
        self.queue.append((200, None, headers or {}, events))
        return self

    def always(self, status, body, headers=None):
        self.fallback = (status, body, headers or {}, None)
        return self

    @property
    def bodies(self):
        return [body for _, _, _, body in self.requests]
