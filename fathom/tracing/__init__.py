"""Tracing: `span(...)` around anything worth seeing, `event(...)` for a point in the current span.
See `fathom.tracing.spans` for the contract; `TraceEvent` rows are what it writes, `selectors` reads
them back (span trees, usage), `services` deletes those older than FATHOM_TRACE_RETENTION_DAYS, `otel`
exports them when OTEL_EXPORTER_OTLP_ENDPOINT is set."""

from fathom.tracing.spans import (
    Span,
    SpanContext,
    continue_trace,
    current_span,
    end_of,
    event,
    flush,
    scope,
    span,
    start_span,
)

__all__ = ["Span", "SpanContext", "continue_trace", "current_span", "end_of", "event", "flush", "scope", "span",
           "start_span"]
