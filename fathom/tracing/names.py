"""The names of trace events: a span named N writes N.started and N.completed or N.failed, but for
the names with words of their own. Read by the spans that write events and by everything that
reads them back (the trace tree, the admin, the OTLP export)."""

EVENT_WORDS = {
    "trace.prompt": ("trace.prompt.received", "trace.prompt.completed", "trace.prompt.failed"),
    "llm.call": ("llm.call.started", "llm.call.completed", "llm.call.failed"),
    "worker.tool": ("worker.tool.call", "worker.tool.result", "worker.tool.result"),
}
ALIASES = {start: name for name, (start, _, _) in EVENT_WORDS.items()}


def words(name: str) -> tuple[str, str, str]:
    """The start, completed and failed event names of the span `name`."""
    return EVENT_WORDS.get(name) or (f"{name}.started", f"{name}.completed", f"{name}.failed")
