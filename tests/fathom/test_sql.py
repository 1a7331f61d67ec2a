"""fathom.sql's prepared statements: a hot query is prepared once per database connection, then only
executed, with the same result as the query run plainly."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fathom.sql import prepared_sql

pytestmark = pytest.mark.django_db(transaction=True)

SQL = "SELECT %s::int + 1, %s::text || '%%s'"  # '%%s': the text %s, no parameter


def _run(sql: str) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(sql, [41, "a"])
        return cursor.fetchone()


def test_a_statement_is_prepared_once_per_connection_and_answers_as_the_plain_query():
    with CaptureQueriesContext(connection) as first:
        assert _run(prepared_sql("fathom_test_sql", SQL)) == _run(SQL) == (42, "a%s")
    with CaptureQueriesContext(connection) as again:
        assert _run(prepared_sql("fathom_test_sql", SQL)) == (42, "a%s")
    assert [q["sql"].split(" ")[0] for q in first.captured_queries] == ["PREPARE", "EXECUTE", "SELECT"]
    assert [q["sql"].split(" ")[0] for q in again.captured_queries] == ["EXECUTE"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = 'fathom_test_sql'")
        assert cursor.fetchone() == (1,)
