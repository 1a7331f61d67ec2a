"""An API key is never in clear: not in the database, not in any API response, not in a log line, not
in a trace."""

import logging

import pytest
from django.db import connection

from fathom.llm import Message, complete
from fathom.llm.errors import LLMAuthenticationError
from fathom.tracing import span
from tests.fathom.wire import chat, message, openai_error, use

SECRET = "sk-never-in-clear-5f1e2d3c4b5a69788796a5b4QRST"


@pytest.fixture
def every_log_line(caplog):
    """Every record of every logger, at DEBUG (the SDKs log their requests there)."""
    root = logging.getLogger()
    level = root.level
    caplog.set_level(logging.DEBUG)
    root.setLevel(logging.DEBUG)
    yield caplog
    root.setLevel(level)


def database_text() -> str:
    """Every text-like column of the model registry and the trace table, as one string."""
    found = []
    with connection.cursor() as cursor:
        for table in ("fathom_llmmodel", "fathom_traceevent"):
            cursor.execute(f"SELECT * FROM {table}")  # noqa: S608 - fixed table names
            found += [str(value) for row in cursor.fetchall() for value in row]
    return "\n".join(found)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_key_is_in_no_column_response_log_line_or_trace(provider, workspace, wire, every_log_line, api):
    base_url = wire.url + "/v1" if provider == "openai" else wire.url
    use(workspace, provider, base_url, api_key=SECRET)
    if provider == "openai":
        wire.respond(200, chat("fine"))
        wire.respond(*openai_error(401, "Incorrect API key provided"))
    else:
        wire.respond(200, message([{"type": "text", "text": "fine"}]))
        wire.respond(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})

    with span("trace.prompt", workspace=workspace, actor_id="keys") as root:
        complete(workspace=workspace, role="main", messages=[Message.user("hello")])
        with pytest.raises(LLMAuthenticationError) as failure:
            complete(workspace=workspace, role="main", messages=[Message.user("again")])

    # The key did go to the provider (so the check below is not vacuous) ...
    sent = wire.requests[0][2]
    assert SECRET in (sent.get("authorization", "") + sent.get("x-api-key", ""))
    # ... and nowhere else.
    responses = [api.get(path).content.decode() for path in
                 (f"/v1/traces/{root.trace_id}", "/v1/traces", "/v1/usage")]
    assert all(SECRET not in body for body in responses) and root.trace_id in responses[0]
    assert SECRET not in database_text()
    assert SECRET not in str(failure.value) and SECRET not in repr(failure.value)
    assert any(r.name.startswith(f"{provider}.") and r.levelno == logging.DEBUG for r in every_log_line.records)
    leaked = [r.getMessage() for r in every_log_line.records if SECRET in r.getMessage() or SECRET in str(r.args)]
    assert leaked == []
