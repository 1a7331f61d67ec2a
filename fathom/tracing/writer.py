"""Writing buffered trace events: one INSERT per flush. A failure to write is logged, never
raised into the code being traced (a trace must not break the work it watches).

The INSERT is built here rather than by `bulk_create`: the flush is on every task's and request's
path, and compiling a bulk_create costs more than the round trip itself."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache

from django.db import DatabaseError, connection, transaction

from fathom.sql import statement_run
from fathom.tracing.models import SafeJSONEncoder, TraceEvent

logger = logging.getLogger(__name__)
EIGHT_PLACES = Decimal("0.00000001")


def write_events(events: list[tuple]) -> int:
    rows = [_row(event) for event in events]
    try:
        _insert(rows)
    except (DatabaseError, transaction.TransactionManagementError) as exc:
        logger.warning("could not write %d trace events: %s", len(rows), exc)
        return 0
    return len(rows)


COLUMNS = ("workspace_id", "created_at", "at", "kind", "name", "status", "trace_id", "span_id", "parent_span_id",
           "run_id", "task_id", "call_id", "actor_id", "duration_ms", "model", "provider", "input_tokens",
           "output_tokens", "cached_tokens", "cost", "error", "payload")


def _row(event: tuple) -> dict:
    """The event's row as JSON says it (times to the microsecond, the cost as its decimal text)."""
    at, kind, owner, payload, duration_ms, columns, status, error = event
    cost = columns.get("cost") or 0
    cost = (cost if isinstance(cost, Decimal) else Decimal(repr(float(cost)))).quantize(EIGHT_PLACES)
    return {
        "workspace_id": owner.workspace_id, "created_at": datetime.now(UTC).isoformat(), "at": at.isoformat(),
        "kind": kind, "name": owner.name, "status": status, "trace_id": owner.trace_id, "span_id": owner.span_id,
        "parent_span_id": owner.parent_span_id, "run_id": str(owner.run_id)[:64], "task_id": str(owner.task_id)[:64],
        "call_id": str(owner.call_id)[:64], "actor_id": str(owner.actor_id)[:200], "duration_ms": duration_ms,
        "model": str(columns.get("model") or "")[:200], "provider": str(columns.get("provider") or "")[:32],
        "input_tokens": int(columns.get("input_tokens") or 0), "output_tokens": int(columns.get("output_tokens") or 0),
        "cached_tokens": int(columns.get("cached_tokens") or 0), "cost": format(cost, "f"), "error": error,
        "payload": payload,
    }


def _insert(rows: list[dict]) -> None:
    # One statement whatever the number of rows, its one parameter the rows as JSON (one encoding, where
    # an array per column cost psycopg more than the round trip). Outside a transaction its commit does
    # not wait for the WAL flush (fathom.sql.statement_run: a crash of the database may lose the last
    # trace rows written, never corrupt anything). Inside the caller's transaction it is a savepoint, so
    # a failed write cannot break that transaction, whose commit stays durable.
    batch = [json.dumps(rows, cls=SafeJSONEncoder)]
    if connection.in_atomic_block:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_insert_sql(), batch)
    else:
        with connection.cursor() as cursor:
            statement_run(cursor, _insert_sql(), batch, durable=False)


@cache
def _insert_sql() -> str:
    table = connection.ops.quote_name(TraceEvent._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in COLUMNS)
    return f"INSERT INTO {table} ({names}) SELECT {names} FROM json_populate_recordset(NULL::{table}, %s::json)"
