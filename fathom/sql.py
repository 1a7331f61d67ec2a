"""Several writes in one statement: INSERTs and UPDATEs built here (rather than compiled by the ORM,
which costs more than the round trip on a hot path), run together as the WITH clauses (data-modifying
common table expressions) of one statement. One round trip, and outside a transaction one commit,
atomic as every statement is. Each clause must change other rows than the others (two changes of one
row in one statement would not both happen)."""

import functools
import re
import weakref

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


def statements_run(statements: list[tuple[str, list]]) -> None:
    """Run the writes `statements` ((sql, params) each: insert_sql's, update_sql's) as one statement."""
    *clauses, (last, last_params) = statements
    sql = ", ".join(f"s{n} AS ({clause})" for n, (clause, _) in enumerate(clauses))
    params = [param for _, clause_params in clauses for param in clause_params]
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {sql} {last}" if clauses else last, [*params, *last_params])


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


def select_list(model, alias: str, *, deferred=()) -> tuple[str, list]:
    """The SELECT list of `model`'s columns from the table named `alias` (but the fields `deferred`, read
    when first used), and their fields: for one read of several models at once (`loaded`)."""
    fields = [field for field in model._meta.concrete_fields if field.name not in deferred]
    return ", ".join(f"{alias}.{connection.ops.quote_name(field.column)}" for field in fields), fields


def loaded(model, fields, values):
    """The instance of `model` whose `fields` (select_list's) have `values`, as the ORM loads a row."""
    converted = []
    for field, value in zip(fields, values, strict=True):
        for converter in field.get_db_converters(connection):
            value = converter(value, field, connection)
        converted.append(value)
    return model.from_db(connection.alias, [field.attname for field in fields], converted)


_PREPARED: "weakref.WeakKeyDictionary[object, set[str]]" = weakref.WeakKeyDictionary()  # connection -> its names


def prepared_sql(name: str, sql: str) -> str:
    """The EXECUTE (with `sql`'s %s parameters, in order) of `sql` prepared as the statement `name` on the
    current database connection, prepared there first if it is not yet: a hot query whose planning costs
    as much as running it is planned once per connection (with `SET LOCAL plan_cache_mode =
    force_generic_plan` in its transaction) rather than at every run. `sql` must be the same at every call
    with one `name`. A prepared statement outlives the transaction that made it, as the pool's connection
    does the request or task."""
    connection.ensure_connection()
    names = _PREPARED.setdefault(connection.connection, set())
    statement, count = _numbered(sql)
    if name not in names:
        with connection.cursor() as cursor:
            cursor.execute(f"PREPARE {name} AS {statement}")
        names.add(name)
    return f"EXECUTE {name}({', '.join(['%s'] * count)})"


@functools.lru_cache(maxsize=64)
def _numbered(sql: str) -> tuple[str, int]:
    """`sql` with its %s placeholders numbered $1, $2, ... (and %% the % it stands for), and their count."""
    tokens, count = [], 0
    for token in re.split(r"(%%|%s)", sql):
        if token == "%s":
            count += 1
        tokens.append(f"${count}" if token == "%s" else "%" if token == "%%" else token)
    return "".join(tokens), count
