"""Helpers shared by the lake's tests: a local server speaking OpenAI's embeddings protocol."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lake.embedders import HashingEmbedder

HANG = "hang"


class EmbeddingsServer:
    """POST /v1/embeddings: answers the queued statuses first, then `status` (200 with hashing
    vectors unless changed). `HANG` holds a request unanswered for `hang_seconds` (longer than the
    task's time limit: the client gives up first), then drops it."""

    def __init__(self, statuses=()):
        self.statuses = list(statuses)
        self.status = 200
        self.hang_seconds = 5.0
        self.requests: list[dict] = []
        self.closed = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                status = server.statuses.pop(0) if server.statuses else server.status
                if status == HANG:
                    server.closed.wait(server.hang_seconds)
                    self.close_connection = True
                    return
                if status != 200:
                    payload = {"error": {"message": f"scripted {status}", "type": "server_error", "code": None}}
                else:
                    vectors = HashingEmbedder(body["dimensions"]).embed(body["input"])
                    payload = {"object": "list", "model": body["model"],
                               "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                               "usage": {"prompt_tokens": 3, "total_tokens": 3}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()
