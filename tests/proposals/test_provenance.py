"""Provenance proposals: the auto-approve gate at levels 1-4 and what approval writes to the lake."""

import pytest
from django.urls import reverse

from fathom.errors import ApplicationError
from lake.models import Delta
from lake.services import delta_create, deltas_embed, provenance_create
from proposals.models import Decision, Proposal, ProposalStatus
from proposals.services import proposal_approve, proposal_draft


@pytest.fixture
def moments(workspace):
    return [delta_create(workspace=workspace, content=f"moment {n}: the rover's wheel slipped on gravel",
                         tags=["kind:note"], source="test") for n in range(3)]


@pytest.fixture
def ladder(workspace, moments):
    """Provenances at levels 1, 2 and 3, each over the one below: children for a proposal at any
    level 1-4."""
    levels = {0: moments}
    for level in (1, 2, 3):
        below = levels[level - 1]
        # one moment more than the level below, so a proposal over that level alone is new material
        aside = delta_create(workspace=workspace, content=f"an aside at level {level}", source="test")
        levels[level] = [provenance_create(workspace=workspace, title=f"level {level} stretch",
                                           child_ids=[*(d.id for d in below), aside.id], level=level)]
    return levels


def draft_provenance(workspace, children, level=None, **payload):
    return proposal_draft(workspace=workspace, tool="provenance", title="Rover wheel trouble", producer="fire:f1",
                          rationale="three moments about one problem",
                          payload={"from_ids": [d.id for d in children], "summary": "The wheel kept slipping.",
                                   **({"level": level} if level is not None else {}), **payload})


def written(proposal) -> Delta:
    return Delta.objects.get(pk=proposal.result_ref.removeprefix("delta:"))


@pytest.mark.parametrize(("level", "auto"), [(1, True), (2, True), (3, False), (4, False)])
def test_the_gate_at_each_level(workspace, ladder, level, auto):
    proposal = draft_provenance(workspace, ladder[level - 1], level=level)

    if auto:
        assert proposal.status == ProposalStatus.APPROVED, proposal.failure_reason
        decision = Decision.objects.get(proposal=proposal)
        assert decision.decided_by == "auto-policy:level<=2"
        assert "decided-by:auto-policy:level<=2" in written(proposal).tags
    else:
        assert proposal.status == ProposalStatus.PENDING
        assert not Decision.objects.filter(proposal=proposal).exists()
        assert not Delta.objects.filter(tags__contains=[f"approved-from-proposal:{proposal.pk}"]).exists()


def test_an_approved_provenance_is_a_kind_provenance_delta_with_its_tags(workspace, moments):
    proposal = draft_provenance(workspace, moments, level=1, tags=["topic:rover"])

    delta = written(proposal)

    assert {"kind:provenance", "provenance-level:1", "topic:rover", f"approved-from-proposal:{proposal.pk}",
            "decided-by:auto-policy:level<=2"} <= set(delta.tags)
    assert sorted(delta.from_ids) == sorted(m.id for m in moments)
    assert delta.content.startswith("Rover wheel trouble\n\nThe wheel kept slipping.")
    assert delta.source == "provenance"


def test_the_provenance_gets_the_centroid_of_embedded_constituents(workspace, moments):
    deltas_embed(delta_ids=[m.id for m in moments])

    delta = written(draft_provenance(workspace, moments, level=1))

    assert delta.provenance_embedding is not None


def test_an_l3_waits_for_an_operator_who_approves_it_over_rest(workspace, ladder, api):
    proposal = draft_provenance(workspace, ladder[2], level=3)

    body = api.post(f"/v1/proposals/{proposal.pk}/approve", {}, format="json").json()

    assert body["status"] == "approved", body
    delta = written(Proposal.objects.get(pk=proposal.pk))
    assert "provenance-level:3" in delta.tags and f"from:{ladder[2][0].id}" in delta.tags
    assert any(tag.startswith("decided-by:operator:apikey:") for tag in delta.tags)


def test_a_level_not_strictly_above_its_children_is_refused_at_draft_with_the_rule(workspace, ladder):
    with pytest.raises(ApplicationError, match="strictly above its children.*needs level 3 or higher") as refused:
        draft_provenance(workspace, ladder[2], level=2)  # over a level-2 child: must be 3+

    assert refused.value.code == "provenance_level"
    assert not Proposal.objects.filter(workspace=workspace).exists()


def test_an_edit_below_the_rule_fails_the_approval_and_the_operator_fixes_it(workspace, ladder):
    proposal = draft_provenance(workspace, ladder[2], level=3)

    failed = proposal_approve(proposal=proposal, decided_by="operator:ops", payload={**proposal.payload, "level": 2})
    assert failed.status == ProposalStatus.FAILED and "strictly above its children" in failed.failure_reason

    fixed = proposal_approve(proposal=proposal, decided_by="operator:ops", payload={**proposal.payload, "level": 4})

    assert fixed.status == ProposalStatus.APPROVED and fixed.level == 4
    assert "provenance-level:4" in written(fixed).tags


def test_a_missing_level_is_the_lowest_the_constituents_allow(workspace, ladder):
    proposal = draft_provenance(workspace, ladder[1])  # over a level-1 episode: a level-2 topic

    assert proposal.level == 2 and proposal.status == ProposalStatus.APPROVED


def test_constituents_may_be_named_by_prefix_and_unknown_ones_are_refused(workspace, moments):
    proposal = proposal_draft(workspace=workspace, tool="provenance", title="t", producer="t",
                              payload={"from_ids": [moments[0].id[:8]], "level": 3})
    assert proposal.payload["from_ids"] == [moments[0].id]

    with pytest.raises(ApplicationError, match="no delta 'feedfacefeedface'"):
        proposal_draft(workspace=workspace, tool="provenance", title="t", producer="t",
                       payload={"from_ids": ["feedfacefeedface"], "level": 3})


def test_another_workspaces_deltas_are_not_constituents(workspace, other_workspace, moments):
    with pytest.raises(ApplicationError, match="no delta"):
        proposal_draft(workspace=other_workspace, tool="provenance", title="t", producer="t",
                       payload={"from_ids": [moments[0].id], "level": 3})


def test_the_admin_shows_the_constituents_content(admin_client, workspace, ladder):
    proposal = draft_provenance(workspace, ladder[2], level=3)

    html = admin_client.get(reverse("admin:proposals_proposal_change", args=[proposal.pk])).content.decode()

    assert "Level 3</strong> over 1 constituent(s)" in html
    assert ladder[2][0].id in html and "level 2 stretch" in html


def test_the_rest_draft_takes_a_level_and_the_gate_answers_at_once(api, moments):
    response = api.post("/v1/proposals/draft", {"tool": "provenance", "title": "Rover", "level": 1,
                                                "payload": {"from_ids": [m.id for m in moments]}}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "approved" and body["latest_decision"]["decided_by"] == "auto-policy:level<=2"
    assert body["result_ref"].startswith("delta:")
