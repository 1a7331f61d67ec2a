"""Facts placed through the collision check (seed 002: URD insert flow, collision semantics)."""

import pytest

from fathom.errors import ApplicationError
from festinger.models import CollisionType, Concept, Conflict, ConflictStatus, Edge, Source
from festinger.services import insert_fact


def _edges(workspace, token):
    return sorted((e.parent.token, e.dimension.token, e.is_isa)
                  for e in Edge.objects.filter(workspace=workspace, concept__token=token).select_related(
                      "parent", "dimension"))


def test_a_new_fact_becomes_an_edge_with_new_tokens_and_a_rooted_dimension(workspace):
    edge = insert_fact(workspace=workspace, concept="gnommoweb", parent="Glitch University",
                       dimension="Hosting Context", is_isa=False, confidence=0.8, source=Source.INFERRED)
    assert isinstance(edge, Edge)
    assert (edge.concept.token, edge.parent.token, edge.dimension.token) == (
        "gnommoweb", "glitch_university", "hosting_context")
    assert (edge.is_isa, edge.confidence, edge.source) == (False, 0.8, "inferred")
    root = Edge.objects.get(workspace=workspace, concept__token="hosting_context")
    assert root.is_root
    assert Concept.objects.filter(workspace=workspace, token="please", is_common=True).exists()  # bootstrapped


def test_the_same_fact_again_confirms_the_edge(workspace):
    first = insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type",
                        is_isa=True, confidence=0.7, source="cloud_llm")
    again = insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type",
                        is_isa=True, confidence=0.9, source="inferred")
    assert again.pk == first.pk
    assert again.last_confirmed > first.last_confirmed and again.confidence == 0.9
    assert not Conflict.objects.filter(workspace=workspace).exists()


@pytest.mark.parametrize("existing_isa, incoming_isa, expected", [
    (True, True, CollisionType.ISA_ISA),
    (False, False, CollisionType.ISPART_ISPART),
    (True, False, CollisionType.MISCLASSIFICATION),
    (False, True, CollisionType.MISCLASSIFICATION),
])
def test_a_second_parent_in_a_dimension_is_queued_with_its_collision_type(workspace, existing_isa, incoming_isa,
                                                                           expected):
    existing = insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type",
                           is_isa=existing_isa, confidence=0.9, source="cloud_llm")
    conflict = insert_fact(workspace=workspace, concept="gnommoweb", parent="container", dimension="type",
                           is_isa=incoming_isa, confidence=0.7, source="inferred")
    assert isinstance(conflict, Conflict)
    assert conflict.collision_type == expected and conflict.status == ConflictStatus.PENDING
    assert (conflict.concept.token, conflict.dimension.token) == ("gnommoweb", "type")
    assert (conflict.existing_parent.token, conflict.incoming_parent.token) == ("repo", "container")
    assert (conflict.existing_is_isa, conflict.incoming_is_isa) == (existing_isa, incoming_isa)
    assert (conflict.incoming_confidence, conflict.incoming_source, conflict.priority) == (0.7, "inferred", False)
    assert list(Edge.objects.filter(concept__token="gnommoweb", workspace=workspace)) == [existing]


def test_the_same_parent_with_the_other_flag_is_a_misclassification(workspace):
    insert_fact(workspace=workspace, concept="michigan", parent="usa", dimension="geography", is_isa=False,
                confidence=0.9, source="cloud_llm")
    conflict = insert_fact(workspace=workspace, concept="michigan", parent="usa", dimension="geography",
                           is_isa=True, confidence=1.0, source="gutask")
    assert conflict.collision_type == CollisionType.MISCLASSIFICATION


def test_the_same_rejected_fact_is_queued_once_and_a_manual_one_raises_its_priority(workspace):
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")
    first = insert_fact(workspace=workspace, concept="gnommoweb", parent="container", dimension="type",
                        is_isa=True, confidence=0.6, source="inferred")
    second = insert_fact(workspace=workspace, concept="gnommoweb", parent="container", dimension="type",
                         is_isa=True, confidence=1.0, source="gutask", priority=True)
    assert second.pk == first.pk
    assert (second.priority, second.incoming_source, second.incoming_confidence) == (True, "gutask", 1.0)
    assert Conflict.objects.filter(workspace=workspace).count() == 1


def test_test_b_an_isa_cue_against_an_existing_isa_fact_queues_and_leaves_the_world_unchanged(workspace):
    """Seed Test B, through the service: gnommoweb ISA repo in type holds; 'gnommoweb is a container'."""
    existing = insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type",
                           is_isa=True, confidence=0.9, source="cloud_llm")
    edges_before = Edge.objects.filter(workspace=workspace).count()

    conflict = insert_fact(workspace=workspace, concept="gnommoweb", parent="container", dimension="type",
                           is_isa=True, confidence=0.8, source="inferred")

    assert Edge.objects.filter(workspace=workspace).count() == edges_before
    assert Edge.objects.get(workspace=workspace, concept__token="gnommoweb", dimension__token="type").pk == existing.pk
    queued = Conflict.objects.filter(workspace=workspace)
    assert [(c.pk, c.collision_type, c.status) for c in queued] == [(conflict.pk, "isa_isa", "pending")]
    assert (conflict.concept_id, conflict.existing_parent.token, conflict.incoming_parent.token,
            conflict.dimension.token) == (existing.concept_id, "repo", "container", "type")


def test_facts_of_two_workspaces_never_collide(workspace, other_workspace):
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")
    edge = insert_fact(workspace=other_workspace, concept="gnommoweb", parent="container", dimension="type",
                       is_isa=True, confidence=0.9, source="cloud_llm")
    assert isinstance(edge, Edge) and edge.workspace_id == other_workspace.pk
    assert edge.concept.workspace_id == other_workspace.pk
    assert _edges(workspace, "gnommoweb") == [("repo", "type", True)]


@pytest.mark.parametrize("args, kwargs, message", [
    (("gnommoweb", "gnommoweb", "type"), {}, "its own parent"),
    (("type", "repo", "type"), {}, "its own dimension"),
    (("gnommoweb", "...", "type"), {}, "not a token"),
    (("gnommoweb", "repo", "type"), {"confidence": 1.5}, "confidence"),
    (("gnommoweb", "repo", "type"), {"source": "rumour"}, "source"),
])
def test_an_invalid_fact_is_refused_with_a_reason(workspace, args, kwargs, message):
    concept, parent, dimension = args
    fields = {"is_isa": True, "confidence": 0.9, "source": "cloud_llm", **kwargs}
    with pytest.raises(ApplicationError, match=message):
        insert_fact(workspace=workspace, concept=concept, parent=parent, dimension=dimension, **fields)
    assert not Edge.objects.filter(workspace=workspace, concept__token="gnommoweb").exists()


def _edge_inserts(captured) -> int:
    return sum(query["sql"].startswith("\n    INSERT INTO festinger_edge") for query in captured.captured_queries)


def test_a_slot_the_cache_holds_is_checked_in_memory_first_and_the_database_decides(workspace, api):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from festinger import cache

    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    cache.world_reload(workspace.pk)  # this process holds the world, the edge in it

    with CaptureQueriesContext(connection) as collision:
        queued = api.post("/v1/festinger/iknowthat", {"fact": "gnommoweb -isa container"}, format="json")
    assert queued.status_code == 202 and queued.json()["conflict"]["collision_type"] == "isa_isa"
    assert _edge_inserts(collision) == 0  # the cache said the slot is taken: no insert tried

    # The cache is stale (the edge went without it hearing): the database's answer stands.
    Edge.objects.filter(workspace=workspace, concept__token="gnommoweb", dimension__token="type").delete()
    with CaptureQueriesContext(connection) as stale:
        placed = api.post("/v1/festinger/iknowthat", {"fact": "gnommoweb -isa container"}, format="json")
    assert placed.status_code == 200 and _edge_inserts(stale) == 1
    assert _edges(workspace, "gnommoweb") == [("container", "type", True)]
    cache.forget(workspace.pk)
