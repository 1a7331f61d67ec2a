"""The proxy holds against bad input on both doors (its own port, and the main port's mount with a key):
every bad request is a 4xx in the client's dialect (Ollama's `{"error": "..."}`, OpenAI's
`{"error": {"message", "type", "param", "code"}}` on /v1/ routes, the API's envelope on the mount), never
a 5xx, and no body carries SQL or a traceback. Bodies are bounded as the API's are (a 413 before the
body is read whole), the Host header is checked and a browser's Origin refused unless allowed, and a
bind beyond loopback without FATHOM_PROXY_TOKEN does not start."""

import json
import socket
from urllib.parse import urlsplit

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError

from festinger.proxy.serve import own_port_app
from tests.festinger.proxy_support import serving

NESTED = "[" * 1000 + "]" * 1000
DEEPER = "[" * 100_000 + "]" * 100_000
CHAT, GENERATE, OPENAI = "/api/chat", "/api/generate", "/v1/chat/completions"
HI = [{"role": "user", "content": "hi"}]


def chat(**fields):
    return {"model": "{model}", "messages": HI, **fields}


def openai(**fields):
    return {"model": "{model}", "messages": HI, **fields}


def message(**fields):
    return {"model": "{model}", "messages": [{"role": "user", "content": "hi", **fields}]}


# (path, body): a body is bytes as they are sent, or an object whose "{model}" is each model in turn.
CORPUS = [
    # the body itself
    (CHAT, b""), (CHAT, b"{nope"), (CHAT, b"[]"), (CHAT, b'"text"'), (CHAT, b"\xff\xfe{}"),
    (CHAT, b'{"model": "llama3.2", "messages": NaN}'),
    (CHAT, ('{"model": "llama3.2", "messages": ' + NESTED + "}").encode()),
    (OPENAI, ('{"model": "llama3.2", "messages": ' + DEEPER + "}").encode()),
    (CHAT, b'{"model": "llama3.2", "messages": [{"role": "user", "content": "a\\ud800b"}]}'),
    # the model's name
    (CHAT, {"model": "llama\u0000", "messages": HI}), (CHAT, {"model": "\ud800x", "messages": HI}),
    (CHAT, {"model": 5, "messages": HI}), (CHAT, {"model": ["llama3.2"], "messages": HI}),
    (CHAT, {"model": {}, "messages": HI}), (CHAT, {"messages": HI}),
    (OPENAI, {"model": "llama\u0000", "messages": HI}), (OPENAI, {"model": "\udfff", "messages": HI}),
    ("/api/show", {"model": "llama3.2\u0000"}), ("/api/show", {"model": 5}),
    ("/api/embed", {"model": "\ud800", "input": "x"}), ("/v1/embeddings", {"model": "x\u0000", "input": "x"}),
    # Ollama's chat and generate: wrong types everywhere
    (CHAT, chat(messages="hi")), (CHAT, chat(messages=[1])), (CHAT, message(role=5)), (CHAT, message(content=5)),
    (CHAT, message(content=["x"])), (CHAT, message(content="a\u0000b")), (CHAT, message(images=5)),
    (CHAT, message(images=[5])), (CHAT, message(tool_calls=5)), (CHAT, message(tool_calls=[5])),
    (CHAT, message(tool_calls=[{"function": "ls"}])), (CHAT, message(tool_calls=[{"function": {"name": 5}}])),
    (CHAT, message(tool_calls=[{"function": {"name": "ls", "arguments": 5}}])), (CHAT, message(tool_name=5)),
    (CHAT, message(thinking=[])), (CHAT, {"model": "{model}", "messages": [{"role": "user", "\u0000": "x"}]}),
    (CHAT, chat(options="hot")), (CHAT, chat(options={"temperature": "hot"})), (CHAT, chat(options={"num_predict": "x"})),
    (CHAT, chat(options={"stop": 5})), (CHAT, chat(options={"stop": [5]})), (CHAT, chat(options={"seed": 1.5})),
    (CHAT, chat(options={"top_p": True})), (CHAT, chat(format=5)), (CHAT, chat(format="xml")), (CHAT, chat(format=["json"])),
    (CHAT, chat(tools="ls")), (CHAT, chat(tools=[5])), (CHAT, chat(tools=[{"function": {"name": 5}}])),
    (CHAT, chat(tools=[{"function": {"name": "ls", "parameters": "x"}}])), (CHAT, chat(think=5)),
    (CHAT, chat(think="very")), (CHAT, chat(stream="yes")), (CHAT, chat(keep_alive={})),
    (GENERATE, {"model": "{model}", "prompt": 5}), (GENERATE, {"model": "{model}", "prompt": "hi", "system": []}),
    (GENERATE, {"model": "{model}", "prompt": "hi", "images": 5}), (GENERATE, {"model": "{model}", "prompt": "hi", "raw": "x"}),
    (GENERATE, {"model": "{model}", "prompt": "hi", "context": "x"}),
    (GENERATE, {"model": "{model}", "prompt": "hi", "options": {"temperature": []}}),
    # OpenAI's chat completions
    (OPENAI, {"model": "{model}"}), (OPENAI, openai(messages="hi")), (OPENAI, openai(messages=[5])),
    (OPENAI, openai(messages=[{"role": 5, "content": "hi"}])), (OPENAI, openai(messages=[{"role": "user", "content": 5}])),
    (OPENAI, openai(messages=[{"role": "user", "content": [5]}])),
    (OPENAI, openai(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": 5}]}])),
    (OPENAI, openai(messages=[{"role": "assistant", "content": "", "tool_calls": "x"}])),
    (OPENAI, openai(messages=[{"role": "assistant", "content": "", "tool_calls": [{"function": "x"}]}])),
    (OPENAI, openai(messages=[{"role": "assistant", "tool_calls": [{"function": {"name": 5, "arguments": 5}}]}])),
    (OPENAI, openai(messages=[{"role": "tool", "tool_call_id": 5, "content": "x"}])),
    (OPENAI, openai(response_format="json")), (OPENAI, openai(response_format={"type": 5})),
    (OPENAI, openai(response_format={"type": "xml"})),
    (OPENAI, openai(response_format={"type": "json_schema", "json_schema": "x"})),
    (OPENAI, openai(response_format={"type": "json_schema", "json_schema": {"schema": 5}})),
    (OPENAI, openai(stream_options="x")), (OPENAI, openai(stream_options={"include_usage": "yes"})),
    (OPENAI, openai(n="2")), (OPENAI, openai(temperature="hot")), (OPENAI, openai(max_tokens="x")),
    (OPENAI, openai(stop=5)), (OPENAI, openai(stop=[5])), (OPENAI, openai(reasoning_effort=5)),
    (OPENAI, openai(reasoning="x")), (OPENAI, openai(user=5)), (OPENAI, openai(tools="x")),
    (OPENAI, openai(tools=[{"function": "x"}])), (OPENAI, openai(seed="x")), (OPENAI, openai(stream="yes")),
    (OPENAI, openai(top_p=[])),
    # embeddings and show
    ("/api/embed", {"model": "{model}", "input": 5}), ("/api/embed", {"model": "{model}", "input": [1]}),
    ("/api/embed", {"model": "{model}", "input": "x", "dimensions": -1}),
    ("/api/embeddings", {"model": "{model}", "prompt": 5}), ("/v1/embeddings", {"model": "{model}", "input": 5}),
    ("/v1/embeddings", {"model": "{model}", "input": "x", "dimensions": "x"}),
    ("/v1/embeddings", {"model": "{model}", "input": "x", "encoding_format": 5}), ("/api/show", {}),
]
MODELS = ["llama3.2", "offline"]  # the fake Ollama's, and a registry model's


def bodies():
    for path, body in CORPUS:
        if isinstance(body, bytes):
            yield path, body
            continue
        text = json.dumps(body)
        for model in MODELS if "{model}" in text else [None]:
            yield path, text.replace("{model}", model or "").encode()


def shape_errors(door: str, path: str, answer: httpx.Response) -> list[str]:
    """What is wrong with an error answer for its door and route (an empty list: nothing)."""
    wrong = []
    if answer.status_code >= 500:
        wrong.append(f"a {answer.status_code}")
    text = answer.text
    if any(leak in text for leak in ("Traceback", "SELECT ", "INSERT ", "psycopg", 'File "')):
        wrong.append("leaks SQL or a traceback")
    try:
        error = answer.json()["error"]
    except (ValueError, KeyError, TypeError):
        return [*wrong, f"not JSON with an error: {text[:200]!r}"]
    if door == "mount":
        if not (isinstance(error, dict) and {"code", "message", "details"} <= error.keys()):
            wrong.append(f"not the API's envelope: {error!r}")
    elif path.startswith("/v1/"):
        if not (isinstance(error, dict) and {"message", "type", "param", "code"} <= error.keys()):
            wrong.append(f"not OpenAI's shape: {error!r}")
    elif not isinstance(error, str):
        wrong.append(f"not Ollama's shape: {error!r}")
    return wrong


@pytest.fixture
def doors(proxy, main_port, keys, fake_ollama):
    """(door, base URL, headers) of the own port and of the mount with a key of `workspace`."""
    fake_ollama.always_chat("an answer a bad request must never get")
    return [("own", proxy, {}), ("mount", f"{main_port}/v1/festinger/proxy", {"Authorization": keys[0]})]


def test_every_bad_input_is_a_4xx_in_the_doors_dialect_on_both_doors(doors, fake_ollama):
    wrong, sent = [], 0
    with httpx.Client(timeout=30) as client:
        for door, base, headers in doors:
            for path, body in bodies():
                answer = client.post(f"{base}{path}", content=body, headers=headers)
                sent += 1
                problems = shape_errors(door, path, answer)
                if not 400 <= answer.status_code < 500:
                    problems.append(f"answered {answer.status_code}")
                if problems:
                    wrong.append(f"{door} {path} {body[:120]!r}: {', '.join(problems)}")
    assert sent > 200
    assert not wrong, f"{len(wrong)} of {sent} bad requests were answered wrong:\n" + "\n".join(wrong)
    assert fake_ollama.chat_bodies() == []  # none of them reached the upstream


def test_unknown_routes_and_methods_are_404_and_405_in_each_doors_shape(doors):
    for door, base, headers in doors:
        for method, path, status in (("GET", "/nope", 404), ("GET", "/v1/nope", 404), ("GET", "/api/chat", 405),
                                     ("DELETE", "/v1/chat/completions", 405), ("PUT", "/api/tags", 405)):
            answer = httpx.request(method, f"{base}{path}", headers=headers)
            assert answer.status_code == status, (door, method, path)
            if door == "mount":
                assert answer.json()["error"]["code"] in ("not_found", "method_not_allowed"), (door, path)
            elif path.startswith("/v1/"):
                assert answer.json()["error"]["message"], (door, path)
            else:  # Ollama's own answer to a route it does not serve
                assert answer.text == f"{status} page not found" if status == 404 else answer.text.startswith("405")


# --- the body limit -----------------------------------------------------------------------------------

def raw_exchange(url: str, head: str, chunks=(), *, headers: dict) -> bytes:
    """Send a request's `head` and `chunks` over a socket, without ending the body, and read what the
    server answers meanwhile (it must answer before the body is complete)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=20) as connection:
        lines = [head, f"Host: {parts.hostname}:{parts.port}", "Content-Type: application/json",
                 *(f"{name}: {value}" for name, value in headers.items())]
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        try:
            for chunk in chunks:
                connection.sendall(chunk)
        except OSError:  # the server answered and closed while the body was coming
            pass
        answer = b""
        while b"\r\n\r\n" not in answer:
            piece = connection.recv(65536)
            if not piece:
                break
            answer += piece
        return answer


def test_a_body_over_the_apis_limit_is_a_413_before_it_is_read_whole(doors, settings):
    settings.FATHOM_API_MAX_BODY_BYTES = 1024 * 1024
    mebibyte = b"x" * (1024 * 1024)
    for door, base, headers in doors:
        path = urlsplit(base).path
        # 20 MB declared: refused at once, though a few bytes of it ever came
        declared = raw_exchange(base, f"POST {path}/api/embed HTTP/1.1", [b'{"model": "llama3.2", "input": "'],
                                headers={**headers, "Content-Length": "20000000"})
        assert declared.startswith(b"HTTP/1.1 413"), (door, declared[:200])
        # sent without a length: refused once it went past the limit, before it ended
        chunked = raw_exchange(base, f"POST {path}/api/chat HTTP/1.1",
                               [f"{len(mebibyte):x}\r\n".encode() + mebibyte + b"\r\n" for _ in range(3)],
                               headers={**headers, "Transfer-Encoding": "chunked"})
        assert chunked.startswith(b"HTTP/1.1 413"), (door, chunked[:200])
        assert b"FATHOM_API_MAX_BODY_BYTES" in httpx.post(
            f"{base}/v1/embeddings", content=b"[" + b"1," * 600_000 + b"1]", headers=headers).content


# --- Host, Origin and the bind ---------------------------------------------------------------------------

def test_a_foreign_host_header_is_refused_on_both_doors(doors, settings):
    for door, base, headers in doors:
        for host in ("evil.example", "evil.example:11435", "192.168.1.20"):
            answer = httpx.get(f"{base}/api/tags", headers={**headers, "Host": host})
            assert answer.status_code == 400, (door, host)
            assert not shape_errors(door, "/api/tags", answer)
        assert httpx.get(f"{base}/api/tags", headers={**headers, "Host": "localhost"}).status_code == 200


def test_the_own_port_answers_the_host_names_the_operator_allows(transactional_db, workspace, settings):
    settings.OLLAMA_HOST = ""
    settings.FATHOM_PROXY_ALLOWED_HOSTS = ["proxy.lan"]
    with serving(own_port_app(workspace_slug=workspace.slug, token="")) as url:
        assert httpx.get(f"{url}/api/tags", headers={"Host": "proxy.lan:11435"}).status_code == 200
        assert httpx.get(f"{url}/api/tags", headers={"Host": "other.lan"}).status_code == 400


def test_a_cross_site_origin_is_refused_and_an_allowed_one_gets_cors(doors, settings, fake_ollama):
    fake_ollama.always_chat("hello")
    page = {"Origin": "https://evil.example", "Content-Type": "text/plain"}  # a form's POST: no preflight
    for door, base, headers in doors:
        refused = httpx.post(f"{base}/api/chat", headers={**headers, **page},
                             content=json.dumps({"model": "llama3.2", "messages": HI, "stream": False}))
        assert refused.status_code == 403 and "FATHOM_PROXY_ALLOWED_ORIGINS" in refused.text, door
        assert "access-control-allow-origin" not in refused.headers and not shape_errors(door, "/api/chat", refused)
    assert fake_ollama.chat_bodies() == []

    settings.FATHOM_PROXY_ALLOWED_ORIGINS = ["http://localhost:*"]
    for door, base, headers in doors:
        allowed = httpx.get(f"{base}/api/tags", headers={**headers, "Origin": "http://localhost:5173"})
        assert allowed.status_code == 200, door
        assert allowed.headers["access-control-allow-origin"] == "http://localhost:5173"
        preflight = httpx.options(f"{base}/api/chat", headers={"Origin": "http://localhost:5173",
                                                               "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 204 and "Authorization" in preflight.headers["access-control-allow-headers"]
        assert httpx.get(f"{base}/api/tags", headers={**headers, "Origin": "https://evil.example"}).status_code == 403


def test_a_bind_beyond_loopback_without_a_token_does_not_start(transactional_db, settings):
    settings.FATHOM_PROXY_TOKEN = ""
    for bind in ("0.0.0.0", "192.168.1.20", "::"):
        with pytest.raises(ImproperlyConfigured, match="FATHOM_PROXY_TOKEN"):
            own_port_app(workspace_slug="default", bind=bind)
    own_port_app(workspace_slug="default", bind="::1")
    own_port_app(workspace_slug="default", bind="0.0.0.0", token="s3cret")
    settings.FATHOM_PROXY_HOST, settings.FATHOM_PROXY_PORT = "0.0.0.0", 11435
    for command in (["fathom", "up"], ["fathom", "proxy", "--host", "0.0.0.0"]):
        with pytest.raises(CommandError, match="FATHOM_PROXY_TOKEN"):
            call_command(*command)
