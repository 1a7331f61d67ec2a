"""REST: draft, list, read, approve (with or without edits), deny; who may decide."""

import pytest
from django_celery_beat.models import PeriodicTask

from lake.models import Delta
from lake.services import delta_create, provenance_create
from proposals.models import Decision, Proposal, Routine
from proposals.services import proposal_draft
from tests.proposals.conftest import routine_payload


def draft(api, **overrides):
    body = {"tool": "routines", "title": "Morning review", "payload": routine_payload(), "rationale": "why",
            **overrides}
    return api.post("/v1/proposals/draft", body, format="json")


def test_it_drafts_a_proposal_waiting_for_an_operator(api):
    response = draft(api)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "pending" and body["tool"] == "routines" and body["latest_decision"] is None
    assert body["producer"].startswith("apikey:")
    assert body["payload"]["schedule"] == "30 7 * * mon-fri"


def test_it_keeps_the_producer_a_script_names(api):
    body = draft(api, producer="script:topical-agent").json()
    assert body["producer"] == "script:topical-agent"


@pytest.mark.parametrize(("body", "message"), [
    ({"tool": "routines", "title": "x", "payload": {}}, "payload.name: This field is required."),
    ({"tool": "nope", "title": "x", "payload": {}}, "unknown tool 'nope'"),
    ({"tool": "routines", "payload": {}}, "title: This field is required."),
    ({"tool": "routines", "title": "x", "payload": routine_payload(schedule="* *")}, "must have 5 fields"),
])
def test_it_refuses_a_bad_draft_with_a_clear_message(api, body, message):
    response = api.post("/v1/proposals/draft", body, format="json")

    assert response.status_code == 400
    assert message in response.json()["error"]["message"]
    assert not Proposal.objects.exists()


def test_it_approves_and_shows_the_latest_decision(api):
    proposal_id = draft(api).json()["id"]

    response = api.post(f"/v1/proposals/{proposal_id}/approve", {}, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    routine = Routine.objects.get()
    assert body["status"] == "approved" and body["result_ref"] == f"routine:{routine.pk}"
    assert body["latest_decision"]["action"] == "approve"
    assert body["latest_decision"]["decided_by"].startswith("operator:apikey:")
    detail = api.get(f"/v1/proposals/{proposal_id}").json()
    assert detail["latest_decision"] == body["latest_decision"] and len(detail["decisions"]) == 1


def test_it_approves_an_edited_payload(api):
    proposal_id = draft(api).json()["id"]

    response = api.post(f"/v1/proposals/{proposal_id}/approve",
                        {"payload": routine_payload(schedule="0 6 * * *")}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["latest_decision"]["action"] == "edit"
    assert response.json()["latest_decision"]["payload"]["schedule"] == "0 6 * * *"
    assert PeriodicTask.objects.get(task="fires.routine_run").crontab.hour == "6"


def test_it_refuses_an_invalid_edit_and_leaves_the_proposal_pending(api):
    proposal_id = draft(api).json()["id"]

    response = api.post(f"/v1/proposals/{proposal_id}/approve", {"payload": {"name": "x"}}, format="json")

    assert response.status_code == 400 and "payload.schedule" in response.json()["error"]["message"]
    assert Proposal.objects.get(pk=proposal_id).status == "pending"


def test_approving_twice_answers_the_same_and_executes_once(api):
    proposal_id = draft(api).json()["id"]

    first = api.post(f"/v1/proposals/{proposal_id}/approve", {}, format="json")
    second = api.post(f"/v1/proposals/{proposal_id}/approve", {}, format="json")

    assert first.status_code == second.status_code == 200
    assert first.json()["result_ref"] == second.json()["result_ref"]
    assert Routine.objects.count() == 1 and Decision.objects.count() == 1


def test_it_denies_with_a_reason_and_keeps_the_proposal_visible(api):
    proposal_id = draft(api).json()["id"]

    response = api.post(f"/v1/proposals/{proposal_id}/deny", {"reason": "not now"}, format="json")

    assert response.status_code == 200
    assert response.json()["status"] == "denied" and response.json()["latest_decision"]["reason"] == "not now"
    assert api.get("/v1/proposals?status=denied").json()["results"][0]["id"] == proposal_id
    approve = api.post(f"/v1/proposals/{proposal_id}/approve", {}, format="json")
    assert approve.status_code == 409 and not Routine.objects.exists()


def test_a_denial_needs_a_reason(api):
    proposal_id = draft(api).json()["id"]

    response = api.post(f"/v1/proposals/{proposal_id}/deny", {}, format="json")

    assert response.status_code == 400 and "reason" in response.json()["error"]["message"]


@pytest.mark.parametrize("action", ["approve", "deny"])
def test_a_viewer_cannot_decide(workspace, api, api_client_for, action):
    proposal_id = draft(api).json()["id"]
    viewer = api_client_for(workspace, "viewer")

    response = viewer.post(f"/v1/proposals/{proposal_id}/{action}", {"reason": "r"}, format="json")

    assert response.status_code == 403
    assert Proposal.objects.get(pk=proposal_id).status == "pending" and not Decision.objects.exists()
    assert viewer.get(f"/v1/proposals/{proposal_id}").status_code == 200  # but may read


@pytest.mark.parametrize("role", ["owner", "operator"])
def test_owners_and_operators_decide(workspace, api, api_client_for, role):
    proposal_id = draft(api).json()["id"]

    response = api_client_for(workspace, role).post(f"/v1/proposals/{proposal_id}/approve", {}, format="json")

    assert response.status_code == 200 and response.json()["status"] == "approved"


def test_it_lists_with_filters(workspace, api):
    routine = proposal_draft(workspace=workspace, tool="routines", title="r", payload=routine_payload(),
                             producer="fire:f1")
    other = proposal_draft(workspace=workspace, tool="routines", title="r2",
                           payload=routine_payload(name="evening"), producer="script:s")
    api.post(f"/v1/proposals/{other.pk}/deny", {"reason": "no"}, format="json")

    def ids(query):
        response = api.get(f"/v1/proposals{query}")
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["results"]]

    assert ids("") == [other.pk, routine.pk]
    assert ids("?status=pending") == [routine.pk]
    assert ids("?producer=script:s") == [other.pk]
    assert ids("?tool=helper-dispatch") == []
    assert ids("?level=3") == []
    assert api.get("/v1/proposals?status=bogus").status_code == 400


def test_listing_costs_the_same_queries_for_one_or_many(workspace, api, django_assert_num_queries):
    for index in range(5):
        proposal_draft(workspace=workspace, tool="routines", title=f"r{index}",
                       payload=routine_payload(name=f"r{index}"), producer="t")
    api.get("/v1/proposals")  # warm the key's last_used_at

    # key lookup, page of proposals, their decisions
    with django_assert_num_queries(3):
        response = api.get("/v1/proposals")
    assert len(response.json()["results"]) == 5


def test_an_unknown_proposal_is_404(api):
    assert api.get("/v1/proposals/999999").status_code == 404
    assert api.post("/v1/proposals/999999/approve", {}, format="json").status_code == 404


def provenance_draft(api, level, from_ids, title="Rover week"):
    return api.post("/v1/proposals/draft", {"tool": "provenance", "title": title, "level": level,
                                             "payload": {"from_ids": from_ids, "summary": "s"}}, format="json")


def test_a_draft_that_approval_would_fail_is_refused_at_draft_naming_the_rule(workspace, api):
    # given an L1 episode over two moments
    notes = [delta_create(workspace=workspace, content=f"rover log {i}") for i in range(2)]
    episode = provenance_create(workspace=workspace, title="Rover week", child_ids=[n.id for n in notes])
    # when an L1 is drafted over that L1, and an L1 over exactly the episode's moments
    over_itself = provenance_draft(api, 1, [episode.id])
    again = provenance_draft(api, 1, [n.id for n in notes])
    # then both are refused with a 400 naming the rule, and nothing was recorded or mirrored
    assert over_itself.status_code == 400, over_itself.content
    assert over_itself.json()["error"]["code"] == "provenance_level"
    assert "strictly above its children" in over_itself.json()["error"]["message"]
    assert again.status_code == 400 and again.json()["error"]["code"] == "provenance_exists"
    assert episode.id in again.json()["error"]["message"]
    assert not Proposal.objects.filter(workspace=workspace).exists()
    # and the same material one level up is a fine draft
    assert provenance_draft(api, 2, [episode.id]).status_code == 201


def test_every_draft_and_decision_is_a_delta_in_the_lake(workspace, api):
    # given drafts through REST (pending) and a denial
    body = draft(api).json()
    api.post(f"/v1/proposals/{body['id']}/deny", {"reason": "not now"}, format="json")
    # then the lake holds the draft as kind:proposal and the denial as kind:decision
    [mirrored] = Delta.objects.filter(workspace=workspace, tags__contains=["kind:proposal", f"proposal:{body['id']}"])
    assert mirrored.title == "Morning review" and "tool:routines" in mirrored.tags
    [decision] = Delta.objects.filter(workspace=workspace, tags__contains=["kind:decision", f"proposal:{body['id']}"])
    assert "decision:denied" in decision.tags and decision.content.endswith("not now")
