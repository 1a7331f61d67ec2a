"""Writing buffered trace events: one bulk INSERT per flush. A failure to write is logged, never
raised into the code being traced (a trace must not break the work it watches)."""

from __future__ import annotations

import logging
from decimal import Decimal

from django.db import DatabaseError, transaction

logger = logging.getLogger(__name__)


def write_events(events: list[tuple]) -> int:
    from fathom.tracing.models import TraceEvent

    rows = [_row(TraceEvent, event) for event in events]
    try:
        with transaction.atomic():
            TraceEvent.objects.bulk_create(rows)
    except (DatabaseError, transaction.TransactionManagementError) as exc:
        logger.warning("could not write %d trace events: %s", len(rows), exc)
        return 0
    return len(rows)


def _row(model, event: tuple):
    at, kind, owner, payload, duration_ms, columns, status, error = event
    columns = columns or {}
    return model(
        workspace_id=owner.workspace_id, at=at, kind=kind, name=owner.name, status=status,
        trace_id=owner.trace_id, span_id=owner.span_id, parent_span_id=owner.parent_span_id,
        run_id=str(owner.run_id)[:64], task_id=str(owner.task_id)[:64], call_id=str(owner.call_id)[:64],
        actor_id=str(owner.actor_id)[:200], duration_ms=duration_ms,
        model=str(columns.get("model") or "")[:200], provider=str(columns.get("provider") or "")[:32],
        input_tokens=int(columns.get("input_tokens") or 0), output_tokens=int(columns.get("output_tokens") or 0),
        cached_tokens=int(columns.get("cached_tokens") or 0),
        cost=Decimal(str(columns.get("cost") or 0)).quantize(Decimal("0.00000001")),
        error=error, payload=payload,
    )
