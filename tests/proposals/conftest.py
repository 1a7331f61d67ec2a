"""Fixtures of the proposals tests: a recording tool registered like any other, helper hosts whose
command is this Python interpreter, routine payloads."""

import sys

import pytest
from rest_framework import serializers

from fathom.errors import ApplicationError
from proposals.handlers import ProposalHandler, register, unregister
from proposals.models import HelperHost


class NotePayload(serializers.Serializer):
    text = serializers.CharField()
    level = serializers.IntegerField(min_value=1, required=False)
    fail_with = serializers.CharField(required=False)


class RecordingHandler(ProposalHandler):
    """Executes by recording the payload; `fail_with` makes it write a row and then fail, so a test
    can see the row rolled back."""

    tool = "test-note"
    payload_serializer = NotePayload
    has_level = True
    auto_approve_by_level = True

    def __init__(self):
        self.executed = []

    def execute(self, *, proposal, payload, decided_by):
        if "fail_with" in payload:
            HelperHost.objects.create(workspace=proposal.workspace, name="written-before-failing", command=["x"])
            raise ApplicationError(payload["fail_with"])
        self.executed.append((proposal.pk, payload, decided_by))
        return f"note:{len(self.executed)}"


@pytest.fixture
def recording_tool():
    handler = register(RecordingHandler())
    yield handler
    unregister(handler.tool)


def python_host(workspace, name: str = "sandbox", script: str = "import sys; print(sys.stdin.read())",
                timeout: int = 30, **fields) -> HelperHost:
    """A helper host running `script` with this interpreter (the task arrives on stdin)."""
    return HelperHost.objects.create(workspace=workspace, name=name, executor="local",
                                     command=[sys.executable, "-c", script], timeout_seconds=timeout, **fields)


def routine_payload(**overrides) -> dict:
    return {"name": "morning-review", "schedule": "30 7 * * mon-fri", "prompt": "Review yesterday's deltas.",
            "route": "feed", **overrides}
