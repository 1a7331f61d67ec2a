"""A fire's journal as the loop holds it: each committed model turn with the results of its tool
calls recorded so far. It is read from the database once, when a fire starts or resumes; after that
the loop adds what it commits, so a turn never reads back rows it has just written."""

import dataclasses
from dataclasses import dataclass

from django.db import connection, models
from django.utils import timezone

from fathom.sql import insert_sql
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.runtime import claims


@dataclass
class JournalTurn:
    turn: FireTurn
    results: dict[str, FireToolCall] = dataclasses.field(default_factory=dict)  # by call id


def journal_read(*, fire: Fire, phase: str) -> list[JournalTurn]:
    """The fire's committed turns of `phase`, oldest first, each with its recorded tool results."""
    turns = FireTurn.objects.filter(fire=fire, phase=phase).order_by("number").prefetch_related("calls")
    return [JournalTurn(turn, {call.call_id: call for call in turn.calls.all()}) for turn in turns]


def journal_append(row: FireTurn | FireToolCall, *, fire: Fire, counters: dict | None = None):
    """Insert `row` (a model turn, or a tool call's result) together with the fire's heartbeat and
    `counters` (increments of the fire's model_calls, tokens and cost), in one statement, atomic on
    its own: the row is written only if this runner still holds the fire, else ClaimLost. Returns
    the fire's cancel_requested_at, read in the same statement.

    One statement (fathom.sql) rather than the ORM's UPDATE, INSERT and SELECT in a transaction: every
    model response and every tool result is committed before the next model call, so this is on every
    turn's path twice; written with the ORM, the harness's time per turn went from 3.5 to 6.3 ms
    (tests/bench/bench_harness.py; target 5 ms)."""
    increments = counters or {}
    assignments = ", ".join([f"{column} = {column} + %s" for column in increments] + ["runner_heartbeat_at = %s"])
    insert, values = insert_sql(row, tail="FROM claimed")
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH claimed AS (UPDATE {Fire._meta.db_table} SET {assignments} WHERE id = %s AND runner = %s "
            f"RETURNING cancel_requested_at) {insert} RETURNING id, (SELECT cancel_requested_at FROM claimed)",
            [*increments.values(), timezone.now(), fire.pk, claims.runner_id(), *values])
        inserted = cursor.fetchone()
    if inserted is None:
        raise claims.ClaimLost(f"fire {fire.pk} is no longer claimed by {claims.runner_id()}")
    row.pk = inserted[0]
    for field in type(row)._meta.concrete_fields:  # the row as it is read back, so a resumed fire renders
        if isinstance(field, models.JSONField):  # the very same prompt
            setattr(row, field.attname, _as_jsonb(getattr(row, field.attname)))
    return inserted[1]


def _as_jsonb(value):
    """`value` with its objects' keys in jsonb's order (shorter keys first, then bytewise)."""
    if isinstance(value, dict):
        return {key: _as_jsonb(value[key]) for key in sorted(value, key=lambda key: (len(key.encode()), key.encode()))}
    if isinstance(value, list):
        return [_as_jsonb(item) for item in value]
    return value
