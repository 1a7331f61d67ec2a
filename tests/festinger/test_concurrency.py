"""Random concurrent inserts against PostgreSQL, each thread on its own connection: the database's
unique index keeps one parent per (concept, dimension), and every fact that did not become (or
confirm) an edge waits in the conflict queue. No insert raises."""

import functools
import threading
import uuid

import pytest
from django.db import connections, transaction
from django.db.models import F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fathom.models import Workspace
from festinger.models import Concept, Conflict, Edge
from festinger.services import insert_fact, world_ensure
from tests.conftest import run_at_once

CONCEPTS = ("alpha", "beta")
PARENTS = ("repo", "container", "service")
DIMENSIONS = ("type", "membership", "zone")
THREADS = 4

facts = st.lists(st.tuples(st.sampled_from(CONCEPTS), st.sampled_from(PARENTS), st.sampled_from(DIMENSIONS),
                           st.booleans()), min_size=2, max_size=16)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(facts=facts)
def test_concurrent_inserts_keep_one_parent_and_queue_every_rejected_fact(facts):
    workspace = Workspace.objects.create(slug=f"race-{uuid.uuid4().hex[:8]}")
    world_ensure(workspace=workspace)

    def insert(share):
        for concept, parent, dimension, is_isa in share:
            insert_fact(workspace=workspace, concept=concept, parent=parent, dimension=dimension,
                        is_isa=is_isa, confidence=0.8, source="inferred")

    errors = run_at_once([functools.partial(insert, facts[index::THREADS]) for index in range(THREADS)])

    assert not errors, errors
    edges = list(Edge.objects.filter(workspace=workspace).exclude(concept=F("dimension"))
                 .values_list("concept__token", "parent__token", "dimension__token", "is_isa"))
    slots = [(concept, dimension) for concept, _parent, dimension, _isa in edges]
    assert len(slots) == len(set(slots)), f"two parents in one (concept, dimension): {edges}"
    queued = set(Conflict.objects.filter(workspace=workspace, status="pending").values_list(
        "concept__token", "incoming_parent__token", "dimension__token", "incoming_is_isa"))
    for fact in facts:
        assert fact in edges or fact in queued, f"{fact} is neither an edge nor queued"
    for concept, parent, dimension, is_isa in queued:
        holder = next(edge for edge in edges if edge[0] == concept and edge[2] == dimension)
        assert (holder[1], holder[3]) != (parent, is_isa), "a fact equal to the edge it collided with was queued"


@pytest.mark.django_db(transaction=True)
def test_a_deadlock_with_another_writer_is_retried_not_raised(workspace):
    """Another writer creates the same new concepts in the opposite order; PostgreSQL aborts our
    transaction (we wait first, and the other side waits longer before checking), and the fact is
    placed on the retry."""
    from django.db import connection

    world_ensure(workspace=workspace)
    table = Concept._meta.db_table
    holding, blocked, results = threading.Event(), threading.Event(), {}

    def other_writer():
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL deadlock_timeout = '10s'")
                sql = (f"INSERT INTO {table} (workspace_id, created_at, token, encounter_count, saliency, novelty, "
                       "is_common) VALUES (%s, now(), %s, 0, 0, 0, false)")
                cursor.execute(sql, [workspace.pk, "zzz_dead"])
                holding.set()
                blocked.wait(timeout=10)
                cursor.execute(sql, [workspace.pk, "aaa_dead"])
            results["other"] = "committed"
        except Exception as exc:
            results["other"] = exc
        finally:
            connections.close_all()

    def ours():
        try:
            holding.wait(timeout=10)
            threading.Timer(0.5, blocked.set).start()  # by then we wait on zzz_dead
            results["ours"] = insert_fact(workspace=workspace, concept="aaa_dead", parent="zzz_dead",
                                          dimension="type", is_isa=True, confidence=0.9, source="inferred")
        except Exception as exc:
            results["ours"] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=other_writer), threading.Thread(target=ours)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert results["other"] == "committed"
    assert isinstance(results["ours"], Edge), results["ours"]
    assert Edge.objects.filter(workspace=workspace, concept__token="aaa_dead", parent__token="zzz_dead").exists()
