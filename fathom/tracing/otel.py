"""OpenTelemetry export. When OTEL_EXPORTER_OTLP_ENDPOINT is set, every span that ends is also sent
over OTLP/HTTP (protobuf) to `<endpoint>/v1/traces`, with the same trace and span ids as its
TraceEvent rows. Model calls carry OpenTelemetry's GenAI attribute names (gen_ai.operation.name,
gen_ai.provider.name / gen_ai.system, gen_ai.request.model, gen_ai.usage.input_tokens, ...), tool
calls the execute_tool ones; Fathom's own ids go in `fathom.*` attributes. Prompt and answer text is
not exported.

Export runs after the flush that wrote the rows, in the SDK's background thread (a batch processor):
the traced code never waits on the collector, and a collector that is down costs a logged warning."""

from __future__ import annotations

import atexit
import threading
from datetime import UTC, datetime
from typing import NamedTuple

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from fathom.tracing.names import words

LLM = "llm.call"
TOOL = "worker.tool"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_pipelines: dict = {}
_lock = threading.Lock()


def export(events: list[tuple]) -> None:
    """Send the spans that ended among `events` (buffered tuples, see `spans.Buffer`)."""
    endpoint = settings.OTEL_EXPORTER_OTLP_ENDPOINT
    if not endpoint:
        return
    pipeline = _pipeline(endpoint)
    pending: dict[str, list] = {}
    for at, kind, owner, payload, duration_ms, columns, status, error in events:
        if status:
            pipeline.processor.on_end(_span(pipeline, owner, at, payload, duration_ms, columns, status, error,
                                            pending.pop(owner.span_id, ())))
        elif kind != words(owner.name)[0]:
            pending.setdefault(owner.span_id, []).append((kind, payload, at))


def flush(timeout_millis: int = 10_000) -> None:
    """Send everything queued now (tests; process shutdown)."""
    for pipeline in list(_pipelines.values()):
        pipeline.processor.force_flush(timeout_millis)


def shutdown() -> None:
    with _lock:
        pipelines = list(_pipelines.values())
        _pipelines.clear()
    for pipeline in pipelines:
        pipeline.processor.shutdown()


def attributes(owner, payload: dict, columns: dict) -> dict:
    """The exported attributes of one span: GenAI names for model and tool calls, fathom.* ids."""
    found = {f"fathom.{key}": str(value) for key in ("run_id", "task_id", "call_id", "actor_id")
             if (value := getattr(owner, key))}
    found["fathom.workspace_id"] = str(owner.workspace_id)
    if owner.name == LLM:
        provider = columns.get("provider") or payload.get("provider") or ""
        found.update({
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.system": provider,
            "gen_ai.request.model": columns.get("model") or "",
            "gen_ai.usage.input_tokens": int(columns.get("input_tokens") or 0),
            "gen_ai.usage.output_tokens": int(columns.get("output_tokens") or 0),
            "gen_ai.usage.cache_read.input_tokens": int(columns.get("cached_tokens") or 0),
            "gen_ai.request.stream": bool(payload.get("stream")),
            "fathom.role": payload.get("role") or "",
            "fathom.cost_usd": float(columns.get("cost") or 0),
        })
        optional = {"gen_ai.response.model": payload.get("response_model"),
                    "gen_ai.response.id": payload.get("request_id"),
                    "gen_ai.response.finish_reasons": [payload["stop_reason"]] if payload.get("stop_reason") else None,
                    "gen_ai.conversation.id": owner.run_id or None,
                    "fathom.attempts": payload.get("attempts")}
        found.update({key: value for key, value in optional.items() if value is not None})
        return found
    if owner.name == TOOL:
        found.update({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": str(payload.get("tool") or ""),
                      "gen_ai.tool.call.id": owner.call_id})
    for key, value in payload.items():
        if isinstance(value, (str, bool, int, float)):
            found.setdefault(f"fathom.{key}", value)
    return found


def span_name(owner, payload: dict, columns: dict) -> str:
    if owner.name == LLM:
        return f"chat {columns.get('model') or ''}".strip()
    if owner.name == TOOL:
        return f"execute_tool {payload.get('tool') or ''}".strip()
    return owner.name


# --- building SDK spans -----------------------------------------------------------------------------------

def _span(pipeline, owner, at, payload, duration_ms, columns, status, error, point_events):
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    trace_id, sampled = int(owner.trace_id, 16), TraceFlags(TraceFlags.SAMPLED)
    context = SpanContext(trace_id, int(owner.span_id, 16), is_remote=False, trace_flags=sampled)
    parent = (SpanContext(trace_id, int(owner.parent_span_id, 16), is_remote=False, trace_flags=sampled)
              if owner.parent_span_id else None)
    end = _nanos(at)
    found = attributes(owner, payload, columns)
    if status == "error":
        found["error.type"] = error.split(":", 1)[0] or "error"
        span_status = Status(StatusCode.ERROR, error)
    else:
        span_status = Status(StatusCode.UNSET)
    events = [Event(kind, {k: v for k, v in data.items() if isinstance(v, (str, bool, int, float))}, _nanos(when))
              for kind, data, when in point_events]
    return ReadableSpan(
        name=span_name(owner, payload, columns), context=context, parent=parent, resource=pipeline.resource,
        attributes=found, events=events, kind=SpanKind.CLIENT if owner.name == LLM else SpanKind.INTERNAL,
        status=span_status, start_time=end - int((duration_ms or 0) * 1_000_000), end_time=end,
        instrumentation_scope=pipeline.scope,
    )


class Pipeline(NamedTuple):
    processor: object
    resource: object
    scope: object


def _pipeline(endpoint: str) -> Pipeline:
    found = _pipelines.get(endpoint)
    if found is not None:
        return found
    with _lock:
        if endpoint not in _pipelines:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.sdk.util.instrumentation import InstrumentationScope

            _pipelines[endpoint] = Pipeline(
                BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")),
                Resource.create({"service.name": settings.OTEL_SERVICE_NAME}),
                InstrumentationScope("fathom.tracing"))
        return _pipelines[endpoint]


def _nanos(at: datetime) -> int:
    delta = at - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


@receiver(setting_changed)
def _endpoint_changed(setting, **_kwargs):
    if setting == "OTEL_EXPORTER_OTLP_ENDPOINT":
        shutdown()


atexit.register(shutdown)
