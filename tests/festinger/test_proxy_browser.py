"""A web page the operator visits cannot drive the proxy (CSRF) nor read it: a page served from another
origin, in headless Chromium, calls the proxy's own port; only an origin in FATHOM_PROXY_ALLOWED_ORIGINS
can."""

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = b"<!doctype html><title>elsewhere</title><p>a page of another origin</p>"
CALL = """
const [url, mode, done] = arguments;
fetch(url + "/api/chat", {method: "POST", mode: mode, headers: {"Content-Type": "text/plain"},
      body: JSON.stringify({model: "llama3.2", stream: false, messages: [{role: "user", content: "hi"}]})})
  .then(answer => answer.text()).then(text => done("read: " + text)).catch(error => done("refused: " + error));
"""


@contextmanager
def page_elsewhere():
    """A page served on another loopback port (another origin than the proxy's); yields its URL."""
    class Page(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_of_another_origin_cannot_call_the_proxy_unless_its_origin_is_allowed(
        proxy, fake_ollama, browser, settings):
    fake_ollama.always_chat("what only the operator's clients may read")
    with page_elsewhere() as page:
        browser.get(page)
        browser.set_script_timeout(20)
        read = browser.execute_async_script(CALL, proxy, "cors")
        blind = browser.execute_async_script(CALL, proxy, "no-cors")  # a form's POST: the page reads nothing
        assert read.startswith("refused:"), read
        assert blind == "read: "
        assert fake_ollama.chat_bodies() == []  # neither reached the model: the proxy refused them

        settings.FATHOM_PROXY_ALLOWED_ORIGINS = [page]
        allowed = browser.execute_async_script(CALL, proxy, "cors")
    assert allowed.startswith("read: ") and "what only the operator's clients may read" in allowed
    assert len(fake_ollama.chat_bodies()) == 1
