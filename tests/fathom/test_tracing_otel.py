"""With OTEL_EXPORTER_OTLP_ENDPOINT set, spans go out over OTLP/HTTP (protobuf) with OpenTelemetry's
GenAI attribute names, to a local collector started by the test."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from fathom.llm import Message, ToolSpec, complete
from fathom.llm.errors import LLMAuthenticationError
from fathom.tracing import otel, span
from tests.fathom.wire import KEY, chat, openai_error, use

SEARCH = ToolSpec("search", "Search", {"type": "object", "properties": {"query": {"type": "string"}}})


class Collector:
    """Receives OTLP/HTTP exports and keeps the decoded spans."""

    def __init__(self):
        self.requests = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                collector.requests.append((self.path, self.headers.get("Content-Type"), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def spans(self):
        found = []
        for _, _, body in self.requests:
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                resource = attrs(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for item in scope_spans.spans:
                        found.append((resource, scope_spans.scope.name, item))
        return found


def attrs(pairs) -> dict:
    values = {}
    for pair in pairs:
        value = pair.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            values[pair.key] = [getattr(v, v.WhichOneof("value")) for v in value.array_value.values]
        else:
            values[pair.key] = getattr(value, kind)
    return values


@pytest.fixture
def collector(settings):
    server = Collector()
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = server.url
    yield server
    server.httpd.shutdown()


def test_spans_are_exported_with_genai_attribute_names_and_the_same_ids(workspace, collector, wire):
    use(workspace, "openai", wire.url + "/v1", model="gpt-test")
    tool_call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"query": "q"}'}}
    wire.respond(200, chat(None, tool_calls=[tool_call], finish="tool_calls", usage=(30, 5, 10)),
                 headers={"x-request-id": "req_1"})
    wire.respond(*openai_error(401, "Incorrect API key provided"))

    with span("trace.prompt", workspace=workspace, actor_id="fire:3", run_id="run-3") as root:
        first = complete(workspace=workspace, role="main", messages=[Message.user("q")], tools=[SEARCH])
        with span("worker.tool", call_id=first.tool_calls[0].id, tool="search"):
            pass
        with pytest.raises(LLMAuthenticationError):
            complete(workspace=workspace, role="main", messages=[Message.user("again")])
    otel.flush()

    [(path, content_type, _)] = collector.requests
    assert path == "/v1/traces" and content_type == "application/x-protobuf"
    exported = collector.spans()
    assert sorted(item.name for _, _, item in exported) == [
        "chat gpt-test", "chat gpt-test", "execute_tool search", "trace.prompt"]
    spans = {item.name: (resource, scope, item) for resource, scope, item in exported}
    assert {item.trace_id.hex() for _, _, item in exported} == {root.trace_id}
    resource, scope, prompt = spans["trace.prompt"]
    assert resource["service.name"] == "fathom" and scope == "fathom.tracing"
    assert prompt.span_id.hex() == root.span_id and prompt.parent_span_id == b""

    calls = [item for _, _, item in exported if item.name == "chat gpt-test"]
    assert len(calls) == 2 and {c.parent_span_id.hex() for c in calls} == {root.span_id}
    ok, failed = sorted(calls, key=lambda c: c.start_time_unix_nano)
    assert ok.kind == ok.SPAN_KIND_CLIENT and ok.end_time_unix_nano > ok.start_time_unix_nano
    assert attrs(ok.attributes) | {"fathom.cost_usd": None} == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-test", "gen_ai.response.model": "test-model", "gen_ai.response.id": "req_1",
        "gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 5, "gen_ai.usage.cache_read.input_tokens": 10,
        "gen_ai.response.finish_reasons": ["tool_calls"], "gen_ai.request.stream": False,
        "gen_ai.conversation.id": "run-3", "fathom.role": "main", "fathom.attempts": 1, "fathom.cost_usd": None,
        "fathom.run_id": "run-3", "fathom.actor_id": "fire:3", "fathom.call_id": first.call_id,
        "fathom.workspace_id": str(workspace.pk)}
    assert attrs(ok.attributes)["fathom.cost_usd"] == pytest.approx((20 * 1 + 10 * 1 + 5 * 2) / 1e6)
    assert failed.status.code == failed.status.STATUS_CODE_ERROR and "Incorrect API key" in failed.status.message
    assert attrs(failed.attributes)["error.type"] == "LLMAuthenticationError"
    assert KEY not in str(exported)

    _, _, tool = spans["execute_tool search"]
    assert attrs(tool.attributes)["gen_ai.operation.name"] == "execute_tool"
    assert attrs(tool.attributes)["gen_ai.tool.name"] == "search"
    assert attrs(tool.attributes)["gen_ai.tool.call.id"] == "call_1"
    assert tool.parent_span_id.hex() == root.span_id


def test_nothing_is_exported_without_an_endpoint(workspace, scripted_llm, settings):
    collector = Collector()
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = ""
    scripted_llm.reply("x")

    complete(workspace=workspace, role="main", messages=[Message.user("x")])
    otel.flush()

    assert collector.requests == [] and otel._pipelines == {}
    collector.httpd.shutdown()


def test_an_export_that_fails_leaves_the_call_and_its_trace_rows(workspace, scripted_llm, settings, monkeypatch,
                                                                 caplog):
    from fathom.tracing.models import TraceEvent

    settings.OTEL_EXPORTER_OTLP_ENDPOINT = "http://127.0.0.1:9/v1/traces"

    def broken(_events):
        raise ValueError("exporter broke")

    monkeypatch.setattr(otel, "export", broken)
    scripted_llm.reply("still answered")

    with span("trace.prompt", workspace=workspace) as root:
        answer = complete(workspace=workspace, role="main", messages=[Message.user("x")])

    assert answer.text == "still answered"
    assert TraceEvent.objects.filter(trace_id=root.trace_id, kind="llm.call.completed").count() == 1
    assert "exporting" in caplog.text and "exporter broke" in caplog.text
