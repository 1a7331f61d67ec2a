"""fathom.sql's read: a row with the rows its foreign keys point at, as the ORM's select_related reads it."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fathom.sql import row_read
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
