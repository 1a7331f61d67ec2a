"""fathom.sql's read (a row with the rows its foreign keys point at, as the ORM's select_related reads
it) and its statement whose commit need not wait for the WAL flush."""

import pytest
from django.core.exceptions import FieldDoesNotExist
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from fathom.sql import row_read, statement_run
from harness.runtime.models import Trigger
from harness.runtime.services import message_send, session_create

pytestmark = pytest.mark.django_db


def _fields(row) -> dict:
    return {field.attname: getattr(row, field.attname) for field in type(row)._meta.concrete_fields}


def test_a_row_and_its_joined_rows_read_in_one_query_equal_the_orms(workspace):
    session = session_create(workspace=workspace)
    message_send(session=session, content="hello", payload={"sit": {"depth": 2}})
    expected = Trigger.objects.select_related("session", "workspace").get(session=session)

    with CaptureQueriesContext(connection) as queries:
        trigger = row_read(Trigger, joined=("session", "workspace"), where="t1.id = %s", params=[session.pk])
        assert trigger.session.workspace_id == workspace.pk and trigger.workspace.slug == workspace.slug
    assert len(queries) == 1
    assert _fields(trigger) == _fields(expected)
    assert trigger.payload == {"sit": {"depth": 2}}  # a JSONField parsed, as the ORM hands it over
    assert _fields(trigger.session) == _fields(expected.session)
    assert isinstance(trigger.session.agent_profile_copy, dict) and trigger.session.agent_profile_copy


def test_a_left_out_field_is_deferred_and_no_match_is_none(workspace):
    session = session_create(workspace=workspace)
    message_send(session=session, content="hello")

    trigger = row_read(Trigger, joined=("session",), leave_out=("content", "session.title"),
                       where="t0.session_id = %s", params=[session.pk], order_by="t0.created_at DESC")
    assert trigger.get_deferred_fields() == {"content"}
    assert trigger.session.get_deferred_fields() == {"title"}
    assert trigger.content == "hello"  # read when first used, as a deferred field is

    assert row_read(Trigger, where="t0.session_id = %s", params=[session.pk], order_by="t0.created_at DESC")
    assert row_read(Trigger, joined=("session",), where="t1.tag = %s", params=["no such tag"]) is None


def test_a_left_out_field_that_does_not_exist_is_refused(workspace):
    with pytest.raises(FieldDoesNotExist):
        row_read(Trigger, joined=("session",), leave_out=("session.titel",), where="true", params=[])


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
