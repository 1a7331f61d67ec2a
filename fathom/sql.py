"""SQL for the hot paths of two stated targets, where the ORM missed them (the harness's 5 ms a turn,
the quality harness's 15 ms a fire), in two forms:

- several writes in one statement: the INSERT or UPDATE the ORM would run for a row, generated from the
  model's fields (never written by hand), run together as the WITH clauses (data-modifying common table
  expressions) of one statement. One round trip, and outside a transaction one commit, atomic as every
  statement is. Each clause must change other rows than the others (two changes of one row in one
  statement would not both happen). The fire's journal (harness.fires.journal: every model turn and
  tool result, twice per turn; the time per turn was 6.3 ms with the ORM's UPDATE, INSERT and SELECT)
  and the quality harness's steps (harness.quality.events);
- a statement whose commit does not wait for the WAL flush (`statement_run`, not durable), for writes
  their maker makes again if a crash of the database forgets them.

Everything else reads and writes through the ORM."""

import functools

from django.db import connection


def update_sql(row, fields, *, expressions: dict | None = None, where: str = "") -> tuple[str, list]:
    """The UPDATE `row.save(update_fields=fields)` would run, as (sql, params), not run. `expressions`:
    columns set to SQL expressions instead ({column: (sql, params)}); `where`: one more condition."""
    meta, quote = type(row)._meta, connection.ops.quote_name
    sets, params = [], []
    for name in fields:
        field = meta.get_field(name)
        sets.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(field.pre_save(row, False), connection))
    for column, (sql, expression_params) in (expressions or {}).items():
        sets.append(f"{quote(column)} = {sql}")
        params += expression_params
    condition = f"{quote(meta.pk.column)} = %s" + (f" AND {where}" if where else "")
    return (f"UPDATE {quote(meta.db_table)} SET {', '.join(sets)} WHERE {condition}",
            [*params, meta.pk.get_db_prep_value(row.pk, connection)])


def statements_run(statements: list[tuple[str, list]], *, durable: bool = True) -> None:
    """Run the writes `statements` ((sql, params) each: insert_sql's, update_sql's) as one statement
    (`durable` as for statement_run)."""
    *clauses, (last, last_params) = statements
    sql = ", ".join(f"s{n} AS ({clause})" for n, (clause, _) in enumerate(clauses))
    params = [param for _, clause_params in clauses for param in clause_params]
    with connection.cursor() as cursor:
        statement_run(cursor, f"WITH {sql} {last}" if clauses else last, [*params, *last_params], durable=durable)


def statement_run(cursor, sql: str, params, *, durable: bool = True) -> None:
    """Run `sql` on `cursor`. Not `durable`: outside a transaction its commit does not wait for the WAL
    flush (`SET LOCAL synchronous_commit TO OFF` in the same query string, one implicit transaction; the
    cursor is left on `sql`'s own result). For writes that a crash of the database may forget (the last
    few hundred milliseconds' worth at most, never corrupted, and flushed by any later durable commit)
    because what made them makes them again: claims, traces, deletes of published outbox rows, the
    quality harness's pre-flight and verdicts. On this machine's disk a commit that waits for the flush
    took from 0.2 to 5 ms. Inside a transaction it is a plain statement of it, whose commit is as
    durable as the caller's."""
    alone = not durable and not connection.in_atomic_block
    cursor.execute(f"SET LOCAL synchronous_commit TO OFF; {sql}" if alone else sql, params)
    if alone:
        cursor.nextset()


def insert_sql(row, *, tail: str = "") -> tuple[str, list]:
    """The INSERT of the new `row` (its primary key too, when set), as (sql, params), not run, in the
    form a WITH clause can make conditional: `INSERT INTO t (columns) SELECT <values> <tail>` (`tail`:
    `FROM ...`, `WHERE ...`). The values are typed, as a SELECT list would read them as text."""
    sql, fields = _insert_parts(type(row), with_key=row.pk is not None)
    values = [field.get_db_prep_save(field.pre_save(row, add=True), connection) for field in fields]
    return f"{sql} {tail}".rstrip(), values


@functools.cache
def _insert_parts(model, *, with_key: bool) -> tuple[str, list]:
    meta, quote = model._meta, connection.ops.quote_name
    fields = [field for field in meta.concrete_fields if with_key or not field.primary_key]
    columns = ", ".join(quote(field.column) for field in fields)
    typed = ", ".join(f"%s::{field.db_type(connection)}" for field in fields)
    return f"INSERT INTO {quote(meta.db_table)} ({columns}) SELECT {typed}", fields


def ids_next_sql(*models) -> tuple[str, list]:
    """An SQL expression (and its params) of the array of new primary keys for `models` (one each, from
    their sequences), to read along with another query: rows that another's INSERT in the same statement
    refers to."""
    nextvals = ", ".join("nextval(pg_get_serial_sequence(%s, %s))" for _ in models)
    return f"ARRAY[{nextvals}]", [name for model in models for name in (model._meta.db_table, model._meta.pk.column)]
