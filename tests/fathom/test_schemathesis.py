"""Schemathesis over the generated schema, calling the app through WSGI with an owner's key: no
operation answers a 5xx, and every answer matches what the schema says (status, content type,
body). A bounded number of examples per operation keeps it to a minute or two."""

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from fathom.services import apikey_create

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Operations left out, and why: the docs page is HTML for people; a synchronous introspection runs a
# whole fire with model calls; the SSE form of the events endpoint streams until its timeout.
SKIPPED_PATHS = ["/v1/docs/", "/v1/introspect"]


# Built at collection (pytest-django has set Django up by then; generating touches no database). The
# lazy `from_fixture` loader is not used: it breaks on pytest 9.
schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
schema.app = WSGIHandler()
schema = schema.exclude(path=SKIPPED_PATHS)


@pytest.fixture
def connection_kept_across_requests():
    """As Django's test client does: a request must not close the connection holding the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def owner_headers(workspace, connection_kept_across_requests):
    return {"Authorization": f"Bearer {apikey_create(workspace=workspace, role='owner').secret}",
            "Accept": "application/json"}


@schema.parametrize()
# Derandomized: the same examples every run, so CI never goes red on a draw; raise max_examples locally
# (or drop derandomize) to explore further.
@settings(max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@pytest.mark.django_db
def test_no_operation_answers_a_5xx_or_breaks_its_schema(case, owner_headers):
    # /v1/health documents its 503 (no worker runs in this test): there a 5xx is the answer, not a failure.
    checks = CHECKS[1:] if case.path == "/v1/health" else CHECKS
    case.call_and_validate(headers=owner_headers, checks=checks)
