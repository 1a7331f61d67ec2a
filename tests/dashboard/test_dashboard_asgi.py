"""The dashboard's static files under ASGI (as uvicorn serves them) and under WSGI."""

import asyncio
import warnings
from pathlib import Path

from django.test import Client

from fathom.asgi import application

CSS = "/static/dashboard/dashboard.css"
CSS_FILE = Path(__file__).resolve().parents[2] / "dashboard" / "static" / "dashboard" / "dashboard.css"


async def asgi_get(path: str) -> list[dict]:
    """The ASGI messages the project sends for a GET of `path`."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"localhost")], "client": ("127.0.0.1", 50000), "server": ("localhost", 80)}
    requested, sent = False, []

    async def receive():
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client stays connected

    async def send(message):
        sent.append(message)

    await application(scope, receive, send)
    return sent


def test_a_static_file_streams_asynchronously_under_asgi():
    # a synchronous file iterator makes Django warn ("StreamingHttpResponse must consume synchronous
    # iterators") and read the whole file in a thread
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sent = asyncio.run(asgi_get(CSS))
    assert [str(w.message) for w in caught if "StreamingHttpResponse" in str(w.message)] == []
    assert sent[0]["status"] == 200
    assert b"".join(m.get("body", b"") for m in sent[1:]) == CSS_FILE.read_bytes()


def test_a_static_file_is_served_under_wsgi():
    response = Client().get(CSS)
    assert response.status_code == 200 and b"".join(response.streaming_content) == CSS_FILE.read_bytes()
