"""`fathom proposals ...` goes through the same service as REST and the admin."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from lake.models import Delta
from proposals.models import Decision, Proposal
from tests.proposals.conftest import routine_payload


def fathom(*args) -> str:
    out = StringIO()
    call_command("fathom", "proposals", *args, stdout=out)
    return out.getvalue()


def test_a_script_drafts_and_an_operator_approves_from_the_shell(workspace):
    out = fathom("draft", "--workspace", workspace.slug, "--tool", "routines", "--title", "Morning",
                 "--payload", json.dumps(routine_payload()), "--producer", "script:nightly")
    proposal = Proposal.objects.get()
    assert out.strip() == f"proposal {proposal.pk}: pending" and proposal.producer == "script:nightly"
    assert f"{proposal.pk}\tpending\troutines\t-\tMorning" in fathom("list", "--workspace", workspace.slug)

    out = fathom("approve", str(proposal.pk), "--by", "operator:ops")

    assert out.startswith(f"proposal {proposal.pk}: approved (routine:")
    assert Decision.objects.get().decided_by == "operator:ops"


def test_the_shell_reports_refusals_as_command_errors(workspace):
    with pytest.raises(CommandError, match="payload.prompt: This field is required"):
        fathom("draft", "--workspace", workspace.slug, "--tool", "routines", "--title", "x",
               "--payload", '{"name": "a", "schedule": "* * * * *"}')
    with pytest.raises(CommandError, match="no proposal 424242"):
        fathom("deny", "424242", "--reason", "r")


def test_a_draft_from_the_shell_is_a_proposal_delta_in_the_lake(workspace):
    fathom("draft", "--workspace", workspace.slug, "--tool", "routines", "--title", "Morning",
           "--payload", json.dumps(routine_payload()))
    proposal = Proposal.objects.get()
    assert Delta.objects.filter(workspace=workspace, tags__contains=["kind:proposal", f"proposal:{proposal.pk}"],
                                content__startswith="Morning").count() == 1
