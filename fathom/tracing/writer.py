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


TYPES = {"workspace_id": "bigint", "created_at": "timestamptz", "at": "timestamptz", "duration_ms": "float8",
         "input_tokens": "integer", "output_tokens": "integer", "cached_tokens": "integer", "cost": "numeric",
         "payload": "jsonb"}


def _row(event: tuple) -> tuple:
    at, kind, owner, payload, duration_ms, columns, status, error = event
    cost = columns.get("cost") or 0
    return (
        owner.workspace_id, datetime.now(UTC), at, kind, owner.name, status, owner.trace_id, owner.span_id,
        owner.parent_span_id, str(owner.run_id)[:64], str(owner.task_id)[:64], str(owner.call_id)[:64],
        str(owner.actor_id)[:200], duration_ms, str(columns.get("model") or "")[:200],
        str(columns.get("provider") or "")[:32], int(columns.get("input_tokens") or 0),
        int(columns.get("output_tokens") or 0), int(columns.get("cached_tokens") or 0),
        (cost if isinstance(cost, Decimal) else Decimal(repr(float(cost)))).quantize(EIGHT_PLACES),
        error, json.dumps(payload, cls=SafeJSONEncoder),
    )


def _insert(rows: list[tuple]) -> None:
    # One statement whatever the number of rows (psycopg parses it once). Outside a transaction it
    # goes with `SET LOCAL` in one query string, which PostgreSQL runs as one implicit transaction:
    # one round trip, and a commit that does not wait for the WAL flush (a crash of the database may
    # lose the last trace rows written, never corrupt anything). Inside the caller's transaction it
    # is a savepoint, so a failed write cannot break that transaction, whose commit stays durable.
    columns = [list(column) for column in zip(*rows, strict=True)]
    if connection.in_atomic_block:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_insert_sql(alone=False), columns)
    else:
        with connection.cursor() as cursor:
            cursor.execute(_insert_sql(alone=True), columns)


@cache
def _insert_sql(*, alone: bool) -> str:
    table = connection.ops.quote_name(TraceEvent._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in COLUMNS)
    arrays = ", ".join(f"%s::{TYPES.get(column, 'text')}[]" for column in COLUMNS)
    insert = f"INSERT INTO {table} ({names}) SELECT * FROM unnest({arrays})"
    return f"SET LOCAL synchronous_commit TO OFF; {insert}" if alone else insert
