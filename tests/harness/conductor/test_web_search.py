"""web_search: with no backend it says so (as its result, to the model); the SearXNG backend reads a
SearXNG-style JSON endpoint (here a local fake server); a backend that fails is a tool error."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from harness.conductor.selectors import run_graph
from harness.conductor.services import run_create
from harness.fires.models import FireToolCall
from harness.fires.tools import ToolError
from harness.fires.tools.web_search import SearxngBackend
from harness.fires.tools.web_search import run as web_search

pytestmark = pytest.mark.django_db


class FakeSearx:
    """A local SearXNG: GET /search?q=...&format=json answers `results`, and records the queries."""

    def __init__(self, results=None, status=200, body=None):
        self.queries, self.results, self.status, self.body = [], results or [], status, body
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                query = parse_qs(urlparse(self.path).query)
                fake.queries.append(query)
                payload = fake.body if fake.body is not None else json.dumps({"query": query["q"][0],
                                                                               "results": fake.results})
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload.encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/search"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def searx(settings):
    server = FakeSearx(results=[
        {"title": "Chip doubles battery life", "url": "https://news.example/chip", "content": "A new chip ..."},
        {"title": "Rust 2.0", "url": "https://news.example/rust", "content": "Released today."}])
    settings.FATHOM_WEB_SEARCH_BACKEND = "searxng"
    settings.FATHOM_WEB_SEARCH_URL = server.url
    yield server
    server.stop()


def test_with_no_backend_the_tool_says_so(settings):
    settings.FATHOM_WEB_SEARCH_BACKEND = "none"
    with pytest.raises(ToolError, match="no web search backend is configured"):
        web_search(None, {"query": "tech news"})


def test_the_searxng_backend_returns_titles_urls_and_snippets(searx):
    text = web_search(None, {"query": "tech news today", "limit": 1})
    assert searx.queries == [{"q": ["tech news today"], "format": ["json"]}]
    assert text == "- Chip doubles battery life <https://news.example/chip>\n  A new chip ..."


def test_nothing_found_is_said_plainly(settings):
    server = FakeSearx(results=[])
    try:
        settings.FATHOM_WEB_SEARCH_BACKEND, settings.FATHOM_WEB_SEARCH_URL = "searxng", server.url
        assert web_search(None, {"query": "zzz"}) == "the web has nothing for 'zzz'"
    finally:
        server.stop()


@pytest.mark.parametrize(("status", "body"), [(500, "{}"), (200, "not json"), (200, '{"results": 3}')])
def test_a_failing_backend_is_a_tool_error(status, body):
    server = FakeSearx(status=status, body=body)
    try:
        with pytest.raises(ToolError, match="web search backend"):
            SearxngBackend(url=server.url).search("q", 5)
    finally:
        server.stop()


def test_a_backend_can_be_named_by_its_dotted_path(settings):
    settings.FATHOM_WEB_SEARCH_BACKEND = f"{__name__}.StaticBackend"
    assert "Static <https://static.example>" in web_search(None, {"query": "anything"})


class StaticBackend:
    def search(self, query, limit):
        return [{"title": "Static", "url": "https://static.example", "snippet": query}]


def test_a_research_worker_searches_the_web_through_the_backend(searx, workspace, driver, conductor_script,
                                                                 main_script):
    conductor_script.call_tool("set_agenda", {"items": [{"capability": "researcher", "task": "today's tech news"}]})
    conductor_script.call_tool("complete", {"answer": "A chip doubles battery life."})
    main_script.call_tool("web_search", {"query": "tech news today"})
    main_script.call_tool("respond", {"body": "A chip doubles battery life."})
    main_script.call_tool("skip", {})
    run = run_create(workspace=workspace, objective="whats tech news today")
    driver.drain()
    call = run.calls.get()
    searched = FireToolCall.objects.get(fire=call.fire, name="web_search")
    assert searched.ok and "Chip doubles battery life <https://news.example/chip>" in searched.result
    assert searx.queries[0]["q"] == ["tech news today"]
    assert [t["name"] for t in run_graph(run=run)["tree"]["children"][0]["children"][0]["children"]] == ["web_search", "skip"]
