"""fathom.sql's statement whose commit need not wait for the WAL flush."""

import pytest
from django.db import connection, transaction

from fathom.sql import statement_run
from harness.runtime.services import session_create

pytestmark = pytest.mark.django_db


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("in_transaction", [False, True])
@pytest.mark.parametrize("durable", [False, True])
def test_a_statement_not_durable_reads_its_own_result_inside_a_transaction_or_alone(workspace, durable,
                                                                                    in_transaction):
    session = session_create(workspace=workspace)
    with transaction.atomic() if in_transaction else connection.cursor(), connection.cursor() as cursor:
        statement_run(cursor, "UPDATE harness_session SET title = %s WHERE id = %s RETURNING title",
                      ["renamed", session.pk], durable=durable)
        assert cursor.fetchone() == ("renamed",)
        with connection.cursor() as other:
            other.execute("SHOW synchronous_commit")  # SET LOCAL: gone with the statement's own transaction
            assert other.fetchone() == ("on",)
    session.refresh_from_db()
    assert session.title == "renamed"
