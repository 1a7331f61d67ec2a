"""The operator's pane in Django admin, through the Django test client."""

import json

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from fathom.models import Membership
from proposals.models import Decision, Proposal, ProposalStatus, Routine
from proposals.services import proposal_draft
from tests.proposals.conftest import routine_payload

CHANGELIST = reverse("admin:proposals_proposal_changelist")


def draft(workspace, name="morning-review", **overrides):
    return proposal_draft(workspace=workspace, tool="routines", title=f"Routine {name}",
                          payload=routine_payload(name=name, **overrides), producer="fire:f1")


def decide_url(proposal):
    return reverse("admin:proposals_proposal_decide", args=[proposal.pk])


@pytest.fixture
def staff_client(client, workspace):
    """A staff member with the proposal permissions who operates `workspace` (and only it)."""

    def make(role="operator", perms=("view_proposal", "decide_proposal")):
        user = User.objects.create_user(username=f"staff-{role}", password="pw", is_staff=True)
        user.user_permissions.set(Permission.objects.filter(content_type__app_label="proposals", codename__in=perms))
        Membership.objects.create(user=user, workspace=workspace, role=role)
        client.force_login(user)
        return client

    return make


def test_the_changelist_shows_pending_first_with_approve_buttons(admin_client, workspace):
    first = draft(workspace, "first")
    denied = draft(workspace, "second")
    admin_client.post(decide_url(denied), {"decision": "deny", "reason": "no"})
    newest_pending = draft(workspace, "third")

    response = admin_client.get(CHANGELIST)

    assert response.status_code == 200
    rows = [row.pk for row in response.context["cl"].result_list]
    assert rows == [newest_pending.pk, first.pk, denied.pk]
    html = response.content.decode()
    assert f'data-proposal="{first.pk}"' in html and f'data-proposal="{denied.pk}"' not in html


def test_the_changelist_filters_by_tool_level_and_status(admin_client, workspace):
    proposal = draft(workspace)

    for query, expected in [("?tool=routines", [proposal.pk]), ("?tool=provenance", []),
                            ("?status__exact=pending", [proposal.pk]), ("?level=3", [])]:
        response = admin_client.get(CHANGELIST + query)
        assert response.status_code == 200, query
        assert [row.pk for row in response.context["cl"].result_list] == expected, query


def test_the_changelist_costs_the_same_queries_for_many_rows(admin_client, workspace, django_assert_max_num_queries):
    for index in range(12):
        draft(workspace, f"r{index}")
    with django_assert_max_num_queries(12):
        response = admin_client.get(CHANGELIST)
    assert len(response.context["cl"].result_list) == 12


def test_the_detail_page_renders_the_payload_the_decision_form_and_the_history(admin_client, workspace):
    proposal = draft(workspace)
    change_url = reverse("admin:proposals_proposal_change", args=[proposal.pk])

    html = admin_client.get(change_url).content.decode()

    assert "Routine <strong>morning-review</strong> runs <code>30 7 * * mon-fri</code>" in html
    assert 'id="decide-form"' in html and 'form="decide-form"' in html
    admin_client.post(decide_url(proposal), {"decision": "approve"})
    html = admin_client.get(change_url).content.decode()
    assert "decision history" in html.lower() and "operator:user:admin" in html
    assert 'id="decide-form"' not in html  # decided: nothing left to decide


def test_an_operator_approves_from_the_admin(admin_client, workspace):
    proposal = draft(workspace)

    response = admin_client.post(decide_url(proposal), {"decision": "approve", "next": CHANGELIST})

    assert response.status_code == 302 and response["Location"] == CHANGELIST
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.APPROVED and Routine.objects.count() == 1
    decision = Decision.objects.get(proposal=proposal)
    assert (decision.action, decision.decided_by) == ("approve", "operator:user:admin")
    assert "approved: routine:" in _messages(admin_client.get(CHANGELIST))


def test_an_operator_edits_and_approves(admin_client, workspace):
    proposal = draft(workspace)
    edited = {**proposal.payload, "schedule": "15 8 * * *"}

    admin_client.post(decide_url(proposal), {"decision": "approve", "payload": json.dumps(edited)})

    decision = Decision.objects.get(proposal=proposal)
    assert decision.action == "edit" and Routine.objects.get().schedule == "15 8 * * *"


def test_an_unchanged_payload_in_the_form_is_a_plain_approval(admin_client, workspace):
    proposal = draft(workspace)

    admin_client.post(decide_url(proposal), {"decision": "approve",
                                             "payload": json.dumps(proposal.payload, indent=2)})

    assert Decision.objects.get(proposal=proposal).action == "approve"


def test_broken_json_in_the_form_is_reported_and_nothing_is_decided(admin_client, workspace):
    proposal = draft(workspace)

    response = admin_client.post(decide_url(proposal), {"decision": "approve", "payload": "{not json"}, follow=True)

    assert "not valid JSON" in _messages(response)
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING and not Decision.objects.exists()


def test_an_operator_denies_with_a_reason_and_not_without(admin_client, workspace):
    proposal = draft(workspace)

    response = admin_client.post(decide_url(proposal), {"decision": "deny", "reason": ""}, follow=True)
    assert "reason" in _messages(response)
    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.PENDING

    admin_client.post(decide_url(proposal), {"decision": "deny", "reason": "not this week"})
    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.DENIED
    assert Decision.objects.get(proposal=proposal).reason == "not this week"


def test_bulk_approve_approves_the_pending_and_skips_the_decided(admin_client, workspace):
    one, two, denied = draft(workspace, "one"), draft(workspace, "two"), draft(workspace, "three")
    admin_client.post(decide_url(denied), {"decision": "deny", "reason": "no"})

    response = admin_client.post(CHANGELIST, {"action": "approve_selected",
                                              "_selected_action": [one.pk, two.pk, denied.pk]}, follow=True)

    assert "Approved 2, failed 0, skipped 1" in _messages(response)
    assert set(Proposal.objects.values_list("status", flat=True)) == {"approved", "denied"}
    assert Routine.objects.count() == 2


def test_bulk_deny_asks_for_a_reason_then_denies(admin_client, workspace):
    one, two = draft(workspace, "one"), draft(workspace, "two")
    selected = {"action": "deny_selected", "_selected_action": [one.pk, two.pk]}

    asked = admin_client.post(CHANGELIST, selected)
    assert asked.status_code == 200 and 'name="reason"' in asked.content.decode()
    assert not Decision.objects.exists()

    response = admin_client.post(CHANGELIST, {**selected, "confirm": "1", "reason": "duplicates"}, follow=True)

    assert "Denied 2" in _messages(response)
    assert list(Decision.objects.values_list("reason", flat=True)) == ["duplicates", "duplicates"]


def test_a_staff_member_without_the_decide_permission_cannot_decide(staff_client, workspace):
    client = staff_client(perms=("view_proposal",))
    proposal = draft(workspace)

    assert client.get(CHANGELIST).status_code == 200
    assert client.post(decide_url(proposal), {"decision": "approve"}).status_code == 403
    client.post(CHANGELIST, {"action": "approve_selected", "_selected_action": [proposal.pk]})
    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.PENDING


def test_a_viewer_member_cannot_decide_even_with_the_permission(staff_client, workspace):
    client = staff_client(role="viewer")
    proposal = draft(workspace)

    assert client.post(decide_url(proposal), {"decision": "approve"}).status_code == 403
    client.post(CHANGELIST, {"action": "approve_selected", "_selected_action": [proposal.pk]})
    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.PENDING


def test_an_operator_member_decides_in_their_workspace_only(staff_client, workspace, other_workspace):
    client = staff_client(role="operator")
    mine, theirs = draft(workspace, "mine"), draft(other_workspace, "theirs")

    listed = [row.pk for row in client.get(CHANGELIST).context["cl"].result_list]
    assert listed == [mine.pk]
    assert client.post(decide_url(theirs), {"decision": "approve"}).status_code == 404
    client.post(decide_url(mine), {"decision": "approve"})

    assert Proposal.objects.get(pk=mine.pk).status == ProposalStatus.APPROVED
    assert Proposal.objects.get(pk=theirs.pk).status == ProposalStatus.PENDING


def test_the_threshold_is_editable_in_admin(admin_client, workspace):
    response = admin_client.post(reverse("admin:proposals_proposalpolicy_add"),
                                 {"workspace": workspace.pk, "auto_approve_max_level": 3})

    assert response.status_code == 302
    from proposals.services import proposal_policy_get

    assert proposal_policy_get(workspace=workspace).auto_approve_max_level == 3


def _messages(response) -> str:
    return " | ".join(str(message) for message in response.context["messages"]) if response.context else ""
