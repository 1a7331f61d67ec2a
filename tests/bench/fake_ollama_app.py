"""A fast fake Ollama for the proxy bench (an ASGI app run by uvicorn in its own process): /api/chat
answers at once, streamed in CHUNKS NDJSON lines or whole; GET /last gives the last chat body seen."""

import json
from datetime import UTC, datetime

CHUNKS = 8
_last: list[bytes] = [b"{}"]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            await send({"type": f"{message['type']}.complete"})
            if message["type"] == "lifespan.shutdown":
                return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["path"] == "/last":
        await _whole(send, _last[0])
        return
    if scope["path"] == "/api/tags":
        await _whole(send, json.dumps({"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest"}]}).encode())
        return
    _last[0] = body
    request = json.loads(body or b"{}")
    model = request.get("model", "llama3.2")
    final = {"model": model, "created_at": _now(), "message": {"role": "assistant", "content": ""}, "done": True,
             "done_reason": "stop", "total_duration": 1000, "load_duration": 10, "prompt_eval_count": 20,
             "prompt_eval_duration": 100, "eval_count": CHUNKS, "eval_duration": 500}
    if request.get("stream", True) is False:
        final["message"]["content"] = "word " * CHUNKS
        await _whole(send, json.dumps(final).encode())
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/x-ndjson")]})
    for index in range(CHUNKS):
        line = {"model": model, "created_at": _now(), "message": {"role": "assistant", "content": f"w{index} "},
                "done": False}
        await send({"type": "http.response.body", "body": json.dumps(line).encode() + b"\n", "more_body": True})
    await send({"type": "http.response.body", "body": json.dumps(final).encode() + b"\n", "more_body": False})


async def _whole(send, data: bytes):
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})
