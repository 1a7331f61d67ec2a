"""Changing what the trace store holds: retention deletes the events older than its window; the spans
a dead process left open are ended by whoever takes its work over."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, time, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from fathom.tracing.models import TraceEvent
from fathom.tracing.names import words
from fathom.tracing.spans import Buffer

logger = logging.getLogger(__name__)
BATCH_SIZE = 5000


def traces_prune(*, retention_days: int | None = None, batch_size: int | None = None) -> dict:
    """Deletes, in every workspace, the trace events that happened before the last `retention_days`
    whole UTC days (and today), so /v1/usage shows a day either whole or not at all. The default is
    FATHOM_TRACE_RETENTION_DAYS; 0 keeps everything. Each DELETE removes at most `batch_size` rows
    (default 5,000) in its own transaction when called outside one, as the task does, so a large
    backlog never holds one long lock; a run stopped half-way keeps what it deleted and the next run
    carries on. Returns the rows deleted, the DELETEs run and the cutoff."""
    days = settings.FATHOM_TRACE_RETENTION_DAYS if retention_days is None else retention_days
    batch_size = BATCH_SIZE if batch_size is None else batch_size
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if days <= 0:
        return {"deleted": 0, "batches": 0, "before": None}
    before = retention_start(days=days)
    deleted = batches = 0
    while True:
        batches += 1
        removed = _delete_batch(before=before, size=batch_size)
        deleted += removed
        if removed < batch_size:
            break
    logger.info("trace retention: deleted %d trace events from before %s in %d batches",
                deleted, before.isoformat(), batches)
    return {"deleted": deleted, "batches": batches, "before": before.isoformat()}


def spans_end(*, workspace_id: int, trace_id: str, where: dict, keep=(), error: str = "") -> int:
    """Ends the spans of the trace that started and never ended, of those whose start event matches
    `where` (TraceEvent filters) but the ones in `keep`: failed with `error`, or completed when it is
    empty. For the spans a dead process left open. Returns how many were ended."""
    events = TraceEvent.objects.filter(workspace_id=workspace_id, trace_id=trace_id)
    ended = events.exclude(status="").values("span_id")
    buffer = Buffer()
    for row in events.filter(status="", **where).exclude(span_id__in=ended).exclude(span_id__in=keep):
        if row.kind == words(row.name)[0]:  # a start, not a point event inside the span
            buffer.add_end_of(row, error=error)
    return buffer.flush()


def run_spans(*, workspace_id: int, trace_id: str, run_id: str) -> list[TraceEvent]:
    """The start events a resumed run needs of its earlier runs, in one query, oldest first: its roots'
    (`trace.prompt.received`, of its trace and `run_id`) and those of its spans that never ended, each
    marked `ended` (whether its span has ended)."""
    table = TraceEvent._meta.db_table
    ended = (f"EXISTS (SELECT 1 FROM {table} e WHERE e.workspace_id = s.workspace_id AND e.trace_id = s.trace_id "
             f"AND e.span_id = s.span_id AND e.status <> '')")
    # raw: the ORM's building of this query cost several times its run (on every resumed fire's way in)
    return list(TraceEvent.objects.raw(
        f"SELECT {', '.join(f's.{field}' for field in _SPAN_FIELDS)}, {ended} AS ended FROM {table} s "
        f"WHERE s.workspace_id = %s AND s.trace_id = %s AND s.run_id = %s AND s.status = '' "
        f"AND (s.kind = 'trace.prompt.received' OR NOT {ended}) ORDER BY s.at, s.id", [workspace_id, trace_id, run_id]))


_SPAN_FIELDS = ("id", "workspace_id", "at", "kind", "name", "status", "trace_id", "span_id", "parent_span_id",
                "run_id", "task_id", "call_id", "actor_id")


def retention_start(*, days: int) -> datetime:
    """The first instant retention keeps: midnight (UTC) `days` days before today."""
    today = timezone.now().astimezone(UTC).date()
    return datetime.combine(today - timedelta(days=days), time.min, tzinfo=UTC)


def _delete_batch(*, before: datetime, size: int) -> int:
    table = connection.ops.quote_name(TraceEvent._meta.db_table)
    # SKIP LOCKED: two runs at once share the rows instead of waiting on each other's batch. ARRAY(...)
    # selects the batch once; as `id IN (SELECT ... LIMIT n)` the planner may run the subquery again for
    # each row it joins, and each run skips the rows the last one locked: more than n rows went.
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE id = ANY(ARRAY("
                       f"SELECT id FROM {table} WHERE at < %s LIMIT %s FOR UPDATE SKIP LOCKED))", [before, size])
        return cursor.rowcount
