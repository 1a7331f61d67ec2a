"""No cycles in a dimension: an edge whose parent descends from its concept is queued as a `cycle`
conflict, also when two writers race the two edges; `fathom festinger check` reports the cycles older
data holds."""

import functools
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models import F
from django.utils import timezone

from fathom.errors import ApplicationError
from festinger.models import Concept, Conflict, Edge
from festinger.resolution import allowed_decisions, conflict_apply
from festinger.selectors import cycles_find
from festinger.services import concepts_ensure, edge_move, insert_fact, world_ensure
from tests.conftest import run_at_once


def isa(workspace, concept, parent, dimension="type"):
    return insert_fact(workspace=workspace, concept=concept, parent=parent, dimension=dimension, is_isa=True,
                       confidence=0.9, source="inferred")


def edges(workspace):
    return set(Edge.objects.filter(workspace=workspace).exclude(concept=F("dimension"))
               .values_list("concept__token", "parent__token", "dimension__token"))


def test_the_reverse_of_an_edge_is_queued_as_a_cycle_conflict(workspace):
    world_ensure(workspace=workspace)
    assert isinstance(isa(workspace, "qa0", "qb0"), Edge)

    second = isa(workspace, "qb0", "qa0")

    assert isinstance(second, Conflict) and second.collision_type == "cycle" and second.status == "pending"
    assert (second.concept.token, second.incoming_parent.token, second.dimension.token) == ("qb0", "qa0", "type")
    assert second.existing_parent.token == "type"  # qb0 hangs from the dimension's root
    assert edges(workspace) == {("qa0", "qb0", "type")}
    assert isa(workspace, "qb0", "qa0").pk == second.pk  # queued once while it waits


def test_a_longer_chain_is_walked_and_other_dimensions_are_free(workspace):
    world_ensure(workspace=workspace)
    isa(workspace, "qa1", "qb1")
    isa(workspace, "qb1", "qc1")

    assert isinstance(isa(workspace, "qc1", "qa1"), Conflict)
    assert isinstance(isa(workspace, "qc1", "qa1", dimension="membership"), Edge)  # another dimension's tree
    assert isinstance(isa(workspace, "qd1", "qa1"), Edge)  # a new leaf under the chain is fine
    assert cycles_find(workspace=workspace) == []


def test_a_cycle_conflict_can_only_be_dismissed(workspace):
    world_ensure(workspace=workspace)
    isa(workspace, "qa2", "qb2")
    conflict = isa(workspace, "qb2", "qa2")

    assert allowed_decisions("cycle") == ("dismiss",)
    with pytest.raises(ApplicationError, match="does not apply"):
        conflict_apply(conflict_id=conflict.pk, decision={"decision": "update"}, actor="operator:test")
    assert conflict_apply(conflict_id=conflict.pk, decision={"decision": "dismiss"},
                          actor="operator:test").status == "dismissed"


@pytest.mark.django_db(transaction=True)
def test_two_writers_racing_the_two_edges_store_one_and_queue_the_other(workspace):
    world_ensure(workspace=workspace)
    rounds = 8
    for number in range(rounds):  # the concepts exist first: the race is on the edges alone
        concepts_ensure(workspace=workspace, tokens=[f"ra{number}", f"rb{number}"])
    errors, results = [], {}

    def place(number, concept, parent):
        results[(number, concept)] = isa(workspace, concept, parent)

    for number in range(rounds):
        errors += run_at_once([functools.partial(place, number, f"ra{number}", f"rb{number}"),
                               functools.partial(place, number, f"rb{number}", f"ra{number}")])

    assert not errors, errors
    for number in range(rounds):
        pair = [results[(number, f"ra{number}")], results[(number, f"rb{number}")]]
        assert sorted(type(result).__name__ for result in pair) == ["Conflict", "Edge"], pair
        assert next(result for result in pair if isinstance(result, Conflict)).collision_type == "cycle"
    assert cycles_find(workspace=workspace) == []


def test_check_reports_the_cycles_in_the_data_and_fails(workspace):
    world_ensure(workspace=workspace)
    out = StringIO()
    call_command("fathom", "festinger", "check", "--workspace", workspace.slug, stdout=out)
    assert out.getvalue().strip() == "no cycles"

    # Data written before the check existed (or by SQL): qx -> qy -> qz -> qx in [type].
    concepts = concepts_ensure(workspace=workspace, tokens=["qx", "qy", "qz", "type", "leaf"])
    now = timezone.now()
    for concept, parent in (("qx", "qy"), ("qy", "qz"), ("qz", "qx"), ("leaf", "qx")):
        Edge.objects.create(workspace=workspace, concept=concepts[concept], parent=concepts[parent],
                            dimension=concepts["type"], is_isa=True, confidence=0.9, last_confirmed=now,
                            source="inferred")

    assert cycles_find(workspace=workspace) == [("type", ("qx", "qy", "qz", "qx"))]
    out = StringIO()
    with pytest.raises(CommandError, match="1 cycle"):
        call_command("fathom", "festinger", "check", stdout=out)
    assert f"{workspace.slug}: cycle in [type]: qx -> qy -> qz -> qx" in out.getvalue()
    assert Concept.objects.filter(workspace=workspace, token="leaf").exists()


def test_moving_an_edge_into_a_dimension_where_it_closes_a_cycle_is_refused(workspace):
    world_ensure(workspace=workspace)
    isa(workspace, "qb3", "qa3", dimension="membership")
    edge = isa(workspace, "qa3", "qb3")

    with pytest.raises(ApplicationError, match="would close a cycle"):
        edge_move(edge=edge, dimension=Concept.objects.get(workspace=workspace, token="membership"),
                  reason="test", actor="operator:test")
    assert edges(workspace) == {("qb3", "qa3", "membership"), ("qa3", "qb3", "type")}
