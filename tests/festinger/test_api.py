"""REST for the world model: /iknowthat, the conflict queue, operator overrides, resolve/run."""

from io import StringIO

import pytest
from django.core.management import call_command

from festinger.models import Conflict, Edge, EdgeHistory, ResolutionRun
from festinger.recollection import recollection_for
from festinger.services import insert_fact, world_ensure


def test_iknowthat_stores_a_manual_fact_at_full_confidence(api):
    response = api.post("/v1/festinger/iknowthat",
                        {"fact": "gnommoweb -isa repo in context of Glitch University"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["result"] == "edge" and body["conflict"] is None
    edge = body["edge"]
    assert (edge["concept"], edge["parent"], edge["dimension"], edge["is_isa"]) == (
        "gnommoweb", "repo", "glitch_university", True)
    assert (edge["confidence"], edge["source"]) == (1.0, "gutask")


@pytest.mark.parametrize("fact, parent, dimension, is_isa", [
    ("gnommoweb -isa repo", "repo", "type", True),
    ("gnommoweb -ispart Glitch University", "glitch_university", "membership", False),
    ("'dobby -ISPART agent_pool in context of owned-by'", "agent_pool", "owned-by", False),
])
def test_iknowthat_defaults_the_dimension_by_relation(api, fact, parent, dimension, is_isa):
    edge = api.post("/v1/festinger/iknowthat", {"fact": fact}, format="json").json()["edge"]
    assert (edge["parent"], edge["dimension"], edge["is_isa"]) == (parent, dimension, is_isa)


def test_iknowthat_on_a_collision_queues_a_priority_conflict(api, workspace):
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")

    response = api.post("/v1/festinger/iknowthat", {"fact": "gnommoweb -isa container"}, format="json")

    assert response.status_code == 202, response.content
    body = response.json()
    assert body["result"] == "conflict" and body["edge"] is None
    conflict = body["conflict"]
    assert (conflict["concept"], conflict["existing_parent"], conflict["incoming_parent"], conflict["dimension"]) == (
        "gnommoweb", "repo", "container", "type")
    assert (conflict["collision_type"], conflict["status"], conflict["priority"]) == ("isa_isa", "pending", True)
    assert (conflict["incoming_confidence"], conflict["incoming_source"]) == (1.0, "gutask")


@pytest.mark.parametrize("fact, message", [
    ("gnommoweb is a repo", "-isa <parent>"),
    ("gnommoweb -isa", "-isa <parent>"),
    ("gnommoweb -isa <parent> in context of <dimension>", "placeholders"),
    ("a -isa b -ispart c", "more than one"),
    ("gnommoweb -isa gnommoweb", "its own parent"),
    ("", "fact"),
])
def test_iknowthat_explains_the_syntax_on_malformed_input(api, workspace, fact, message):
    response = api.post("/v1/festinger/iknowthat", {"fact": fact}, format="json")
    assert response.status_code == 400, response.content
    assert message in response.json()["error"]["message"]
    assert not Edge.objects.filter(workspace=workspace, concept__token="gnommoweb").exists()


def test_a_viewer_cannot_write_facts(workspace, api_client_for):
    viewer = api_client_for(workspace, "viewer")
    assert viewer.post("/v1/festinger/iknowthat", {"fact": "a -isa b"}, format="json").status_code == 403


def _queue(workspace):
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")
    isa = insert_fact(workspace=workspace, concept="gnommoweb", parent="container", dimension="type",
                      is_isa=True, confidence=1.0, source="gutask", priority=True)
    insert_fact(workspace=workspace, concept="dobby", parent="agent_pool", dimension="membership",
                is_isa=False, confidence=0.9, source="cloud_llm")
    ispart = insert_fact(workspace=workspace, concept="dobby", parent="worker_pool", dimension="membership",
                         is_isa=False, confidence=0.6, source="inferred")
    return isa, ispart


def test_conflicts_are_listed_newest_first_with_filters(api, workspace, django_assert_max_num_queries):
    isa, ispart = _queue(workspace)
    Conflict.objects.filter(pk=ispart.pk).update(status="dismissed")

    with django_assert_max_num_queries(4):
        body = api.get("/v1/festinger/conflicts").json()
    assert [row["id"] for row in body["results"]] == [ispart.pk, isa.pk]
    for query, expected in [("?status=pending", [isa.pk]), ("?status=dismissed", [ispart.pk]),
                            ("?collision_type=ispart_ispart", [ispart.pk]), ("?priority=true", [isa.pk]),
                            ("?priority=false", [ispart.pk]), ("?concept=Dobby", [ispart.pk]),
                            ("?since=2999-01-01T00:00:00Z", [])]:
        rows = api.get("/v1/festinger/conflicts" + query).json()["results"]
        assert [row["id"] for row in rows] == expected, query
    response = api.get("/v1/festinger/conflicts?status=open")
    assert response.status_code == 400 and "status" in response.json()["error"]["message"]
    assert api.get(f"/v1/festinger/conflicts/{isa.pk}").json()["incoming_parent"] == "container"


def test_an_operator_resolves_a_conflict_and_the_decision_is_recorded(api, workspace):
    isa, _ = _queue(workspace)
    decision = {"decision": "decompose", "existing_dimension": "artifact-type", "new_dimension": "deployment-type",
                "reasoning": "both true"}

    response = api.post(f"/v1/festinger/conflicts/{isa.pk}/resolve", decision, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "resolved" and body["resolved_by"].startswith("operator:apikey:")
    assert body["resolution"]["decision"] == decision and body["resolution"]["by"] == body["resolved_by"]
    assert sorted(Edge.objects.filter(workspace=workspace, concept__token="gnommoweb")
                  .values_list("parent__token", "dimension__token")) == [
        ("container", "deployment-type"), ("repo", "artifact-type")]
    assert EdgeHistory.objects.get(workspace=workspace).actor == body["resolved_by"]

    again = api.post(f"/v1/festinger/conflicts/{isa.pk}/resolve", decision, format="json")
    assert again.status_code == 409 and "resolved already" in again.json()["error"]["message"]


def test_an_invalid_operator_decision_is_a_400_and_changes_nothing(api, workspace):
    _, ispart = _queue(workspace)
    response = api.post(f"/v1/festinger/conflicts/{ispart.pk}/resolve",
                        {"decision": "decompose", "existing_dimension": "a", "new_dimension": "b"}, format="json")
    assert response.status_code == 400 and "does not apply" in response.json()["error"]["message"]
    assert Conflict.objects.get(pk=ispart.pk).status == "pending"
    assert api.post(f"/v1/festinger/conflicts/{ispart.pk}/resolve", {"decision": "maybe"},
                    format="json").status_code == 400


def test_an_operator_dismisses_a_conflict(api, workspace):
    _, ispart = _queue(workspace)
    response = api.post(f"/v1/festinger/conflicts/{ispart.pk}/dismiss", {"reason": "noise"}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "dismissed"
    assert response.json()["resolution"]["decision"]["reasoning"] == "noise"
    assert sorted(Edge.objects.filter(workspace=workspace, concept__token="dobby")
                  .values_list("parent__token", flat=True)) == ["agent_pool"]


def test_only_owners_and_operators_override(workspace, api_client_for):
    isa, _ = _queue(workspace)
    viewer = api_client_for(workspace, "viewer")
    assert viewer.get("/v1/festinger/conflicts").status_code == 200
    assert viewer.post(f"/v1/festinger/conflicts/{isa.pk}/dismiss", {}, format="json").status_code == 403
    assert viewer.post(f"/v1/festinger/conflicts/{isa.pk}/resolve", {"decision": "dismiss"},
                       format="json").status_code == 403
    assert viewer.post("/v1/festinger/resolve/run", {}, format="json").status_code == 403
    owner = api_client_for(workspace, "owner")
    assert owner.post(f"/v1/festinger/conflicts/{isa.pk}/dismiss", {}, format="json").status_code == 200
    assert Conflict.objects.get(pk=isa.pk).status == "dismissed"


def test_resolve_run_queues_a_run(api, workspace, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.post("/v1/festinger/resolve/run", {}, format="json")
    assert response.status_code == 202
    run = ResolutionRun.objects.get(pk=response.json()["id"])
    assert run.workspace_id == workspace.pk and run.trigger.startswith("operator:apikey:")
    assert len(callbacks) == 1  # the task is sent after commit
    assert api.get(f"/v1/festinger/resolve/runs/{run.pk}").json()["status"] in ("queued", "running", "finished")


def test_a_leading_article_is_no_part_of_the_concept_whatever_the_entry_point(api, workspace):
    # given the fact taught with an article, over REST and from the shell
    world_ensure(workspace=workspace)
    edge = api.post("/v1/festinger/iknowthat", {"fact": "The Glitch University -isa school"}, format="json").json()["edge"]
    call_command("fathom", "festinger", "iknowthat", "the glitch university -ispart the Open Campus",
                 "--workspace", workspace.slug, stdout=StringIO())
    # then both stored the concept a chat message names, and the message recalls it
    assert edge["concept"] == "glitch_university"
    assert set(Edge.objects.filter(workspace=workspace, concept__token="glitch_university")
               .values_list("parent__token", flat=True)) == {"school", "open_campus"}
    assert not Edge.objects.filter(workspace=workspace, concept__token__startswith="the_").exists()
    for _ in range(5):  # salient by now
        recollection = recollection_for(workspace_id=workspace.pk, text="I study at The Glitch University")
    assert "glitch_university: [membership] open_campus [type] school" in recollection.block, recollection.block
