"""The proposal lifecycle through its one service: draft, the gate, approve, deny, edit, failure."""


import pytest
from django_celery_beat.models import PeriodicTask

from fathom.errors import ApplicationError, ConflictError
from proposals.models import Decision, HelperHost, Proposal, ProposalStatus, Routine
from proposals.services import proposal_approve, proposal_deny, proposal_draft, proposal_policy_set
from tests.conftest import run_at_once
from tests.proposals.conftest import routine_payload

OPERATOR = "operator:ops@example.com"


def draft_routine(workspace, **overrides):
    return proposal_draft(workspace=workspace, tool="routines", title="Morning review",
                          payload=routine_payload(**overrides), producer="fire:abc123", rationale="keeps the day")


def test_a_draft_is_recorded_pending_with_its_validated_payload(workspace):
    proposal = draft_routine(workspace, schedule="@daily")

    assert proposal.status == ProposalStatus.PENDING
    assert proposal.payload["schedule"] == "0 0 * * *"  # normalised
    assert proposal.payload["timezone"] == "UTC"
    assert proposal.producer == "fire:abc123" and proposal.rationale == "keeps the day"
    assert not Decision.objects.exists() and not Routine.objects.exists()


def test_an_unknown_tool_is_refused_naming_the_registered_ones(workspace):
    with pytest.raises(ApplicationError, match="unknown tool 'teleport'.*helper-dispatch, provenance, routines"):
        proposal_draft(workspace=workspace, tool="teleport", title="x", payload={}, producer="script:t")
    assert not Proposal.objects.exists()


def test_an_invalid_payload_is_refused_naming_the_field(workspace):
    with pytest.raises(ApplicationError, match=r"payload.prompt: This field is required"):
        proposal_draft(workspace=workspace, tool="routines", title="x", payload={"name": "a", "schedule": "* * * * *"},
                       producer="script:t")
    with pytest.raises(ApplicationError, match="payload must be a JSON object"):
        proposal_draft(workspace=workspace, tool="routines", title="x", payload=["a"], producer="script:t")
    assert not Proposal.objects.exists()


def test_approval_executes_and_records_the_decision(workspace):
    proposal = draft_routine(workspace)

    approved = proposal_approve(proposal=proposal, decided_by=OPERATOR)

    routine = Routine.objects.get(workspace=workspace)
    assert approved.status == ProposalStatus.APPROVED and approved.result_ref == f"routine:{routine.pk}"
    decision = Decision.objects.get(proposal=proposal)
    assert (decision.action, decision.decided_by, decision.result_ref) == ("approve", OPERATOR, approved.result_ref)
    assert decision.payload == proposal.payload


def test_approving_twice_executes_once_and_records_one_decision(workspace):
    proposal = draft_routine(workspace)
    proposal_approve(proposal=proposal, decided_by=OPERATOR)

    again = proposal_approve(proposal=proposal, decided_by="operator:someone-else",
                             payload=routine_payload(name="another-name"))

    assert again.status == ProposalStatus.APPROVED
    assert Routine.objects.count() == 1 and PeriodicTask.objects.filter(task="fires.routine_run").count() == 1
    assert Decision.objects.filter(proposal=proposal).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_approvals_racing_execute_once(workspace, recording_tool):
    proposal = proposal_draft(workspace=workspace, tool="test-note", title="race", payload={"text": "once"},
                              producer="script:t")

    errors = run_at_once([lambda: proposal_approve(proposal=proposal, decided_by=OPERATOR)] * 2)

    assert not errors
    assert len(recording_tool.executed) == 1
    assert Decision.objects.filter(proposal=proposal).count() == 1


def test_denial_records_the_reason_and_keeps_the_proposal(workspace):
    proposal = draft_routine(workspace)

    denied = proposal_deny(proposal=proposal, decided_by=OPERATOR, reason="too early in the day")

    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.DENIED == denied.status
    decision = Decision.objects.get(proposal=proposal)
    assert (decision.action, decision.reason) == ("deny", "too early in the day")
    assert not Routine.objects.exists()
    # Denying again changes nothing; approving a denied proposal is refused.
    proposal_deny(proposal=proposal, decided_by=OPERATOR, reason="again")
    assert Decision.objects.filter(proposal=proposal).count() == 1
    with pytest.raises(ConflictError, match="was denied"):
        proposal_approve(proposal=proposal, decided_by=OPERATOR)
    assert not Routine.objects.exists()


def test_a_denial_needs_a_reason_and_an_approved_proposal_cannot_be_denied(workspace):
    proposal = draft_routine(workspace)
    with pytest.raises(ApplicationError, match="reason"):
        proposal_deny(proposal=proposal, decided_by=OPERATOR, reason="  ")
    proposal_approve(proposal=proposal, decided_by=OPERATOR)
    with pytest.raises(ConflictError, match="approved already"):
        proposal_deny(proposal=proposal, decided_by=OPERATOR, reason="changed my mind")
    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.APPROVED


def test_approving_an_edited_payload_records_an_edit_and_executes_the_edit(workspace):
    proposal = draft_routine(workspace)

    proposal_approve(proposal=proposal, decided_by=OPERATOR, payload=routine_payload(schedule="0 9 * * *"))

    decision = Decision.objects.get(proposal=proposal)
    assert decision.action == "edit" and decision.payload["schedule"] == "0 9 * * *"
    assert Routine.objects.get().schedule == "0 9 * * *"
    assert Proposal.objects.get(pk=proposal.pk).payload["schedule"] == "30 7 * * mon-fri"  # the draft is kept


def test_an_invalid_edit_is_refused_and_records_nothing(workspace):
    proposal = draft_routine(workspace)

    with pytest.raises(ApplicationError, match="minute field '61'"):
        proposal_approve(proposal=proposal, decided_by=OPERATOR, payload=routine_payload(schedule="61 * * * *"))

    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.PENDING
    assert not Decision.objects.exists() and not Routine.objects.exists()


def test_a_failing_execution_marks_the_proposal_failed_and_rolls_back_what_it_wrote(workspace, recording_tool):
    proposal = proposal_draft(workspace=workspace, tool="test-note", title="bad", producer="script:t",
                              payload={"text": "x", "fail_with": "the lake said no"})

    failed = proposal_approve(proposal=proposal, decided_by=OPERATOR)

    assert failed.status == ProposalStatus.FAILED and failed.failure_reason == "the lake said no"
    assert Decision.objects.get(proposal=proposal).error == "the lake said no"
    assert not HelperHost.objects.filter(name="written-before-failing").exists()


def test_a_failed_proposal_may_be_approved_again_with_a_fixed_payload(workspace, recording_tool):
    proposal = proposal_draft(workspace=workspace, tool="test-note", title="bad", producer="script:t",
                              payload={"text": "x", "fail_with": "no"})
    proposal_approve(proposal=proposal, decided_by=OPERATOR)

    fixed = proposal_approve(proposal=proposal, decided_by=OPERATOR, payload={"text": "x"})

    assert fixed.status == ProposalStatus.APPROVED and fixed.failure_reason == ""
    assert [d.action for d in Decision.objects.filter(proposal=proposal).order_by("created_at", "id")] == \
        ["approve", "edit"]


@pytest.mark.parametrize(("level", "auto"), [(1, True), (2, True), (3, False), (4, False)])
def test_the_gate_approves_levels_up_to_the_threshold_at_draft_time(workspace, recording_tool, level, auto):
    proposal = proposal_draft(workspace=workspace, tool="test-note", title="t", payload={"text": "x"},
                              level=level, producer="script:t")

    assert proposal.status == (ProposalStatus.APPROVED if auto else ProposalStatus.PENDING)
    decisions = list(Decision.objects.filter(proposal=proposal))
    assert [d.decided_by for d in decisions] == (["auto-policy:level<=2"] if auto else [])
    assert len(recording_tool.executed) == (1 if auto else 0)


def test_the_threshold_is_the_workspaces_own(workspace, other_workspace, recording_tool):
    proposal_policy_set(workspace=workspace, auto_approve_max_level=3)

    here = proposal_draft(workspace=workspace, tool="test-note", title="t", payload={"text": "x"}, level=3,
                          producer="script:t")
    there = proposal_draft(workspace=other_workspace, tool="test-note", title="t", payload={"text": "x"}, level=3,
                           producer="script:t")

    assert here.status == ProposalStatus.APPROVED and there.status == ProposalStatus.PENDING
    assert Decision.objects.get(proposal=here).decided_by == "auto-policy:level<=3"


def test_a_level_on_a_tool_without_levels_is_refused(workspace):
    with pytest.raises(ApplicationError, match="routines proposals have no level"):
        proposal_draft(workspace=workspace, tool="routines", title="x", payload=routine_payload(), level=1,
                       producer="script:t")
