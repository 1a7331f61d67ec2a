"""Several writes in one statement: UPDATEs built here (rather than compiled by the ORM, which costs
more than the round trip on a hot path), run together as the WITH clauses (data-modifying common table
expressions) of one statement. One round trip, and outside a transaction one commit, atomic as every
statement is. Each clause must change other rows than the others (two changes of one row in one
statement would not both happen)."""

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
    """Run the writes `statements` ((sql, params) each, UPDATEs but the last) as one statement."""
    *clauses, (last, last_params) = statements
    sql = ", ".join(f"s{n} AS ({clause})" for n, (clause, _) in enumerate(clauses))
    params = [param for _, clause_params in clauses for param in clause_params]
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {sql} {last}" if clauses else last, [*params, *last_params])
