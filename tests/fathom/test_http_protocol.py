"""uvicorn as `fathom up` runs it answers a request it cannot read with the JSON envelope."""

import json
import socket
import threading
import time

import pytest
import uvicorn

from fathom.http_protocol import MAX_REQUEST_HEAD_BYTES, H11Protocol, uvicorn_args
from fathom.supervisor import stack_children


async def hello(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def server_port():
    config = uvicorn.Config(hello, host="127.0.0.1", port=0, http=H11Protocol, lifespan="off", log_level="error",
                            h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield server.servers[0].sockets[0].getsockname()[1]
    server.should_exit = True
    thread.join(timeout=10)


def exchange(port: int, request: bytes) -> tuple[int, dict, bytes]:
    """Send in small pieces, as a client on a real network does, so the server sees an incomplete head."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        try:
            for start in range(0, len(request), 16 * 1024):
                client.sendall(request[start:start + 16 * 1024])
                time.sleep(0.001)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the whole request was sent
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def test_a_request_line_over_the_limit_is_a_431_with_the_envelope(server_port):
    request = b"GET /v1/deltas?q=" + b"a" * (4 * MAX_REQUEST_HEAD_BYTES) + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    status, headers, body = exchange(server_port, request)
    assert status == 431 and headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == "request_head_too_large" and f"{MAX_REQUEST_HEAD_BYTES:,} bytes" in error["message"]


def test_a_request_that_is_not_http_is_a_400_with_the_envelope(server_port):
    status, headers, body = exchange(server_port, b"NOT HTTP AT ALL\r\n\r\n")
    assert status == 400 and json.loads(body)["error"]["code"] == "bad_request"


def test_a_request_line_under_the_limit_is_served(server_port):
    request = b"GET /v1/deltas?q=" + b"a" * (MAX_REQUEST_HEAD_BYTES // 2) + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    assert exchange(server_port, request)[0] == 200


def test_fathom_up_runs_uvicorn_with_this_protocol_and_limit():
    web = next(child for child in stack_children(host="127.0.0.1", port=8000) if child.name == "web")
    assert web.argv[web.argv.index("--http") + 1] == "fathom.http_protocol:H11Protocol"
    assert web.argv[web.argv.index("--h11-max-incomplete-event-size") + 1] == str(MAX_REQUEST_HEAD_BYTES)
    assert set(uvicorn_args()) <= set(web.argv)
