import math
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction

from fathom.errors import ApplicationError
from lake.embedders import HashingEmbedder
from lake.models import Delta
from lake.selectors import provenance_parents
from lake.services import deltas_create, deltas_embed, provenance_centroids_refresh, provenance_create


def _mean(vectors):
    return [sum(values) / len(values) for values in zip(*vectors, strict=True)]


def _close(a, b, tolerance=1e-5):
    return all(math.isclose(x, y, abs_tol=tolerance) for x, y in zip(a, b, strict=True))


# --- deltas --------------------------------------------------------------------------------------


def test_a_delta_is_immutable_except_for_its_embeddings(workspace, moments):
    (delta,) = moments("the first version", embed=False)

    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        Delta.objects.filter(pk=delta.pk).update(content="a rewritten moment")
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        Delta.objects.filter(pk=delta.pk).update(tags=["kind:other"])

    Delta.objects.filter(pk=delta.pk).update(embedding=[0.5] * 384, embedding_model="x")
    delta.refresh_from_db()
    assert delta.content == "the first version" and delta.embedding_model == "x"


def test_a_batch_is_written_all_or_nothing_and_errors_name_the_item_and_field(workspace):
    items = [{"content": "fine"}, {"content": "also fine"}, {"content": "bad tags", "tags": ["has space"]}]

    with pytest.raises(ApplicationError, match=r"items\[2\]\.tags") as error:
        deltas_create(workspace=workspace, items=items)

    assert error.value.details == {"item": 2, "field": "tags"}
    assert not Delta.objects.filter(workspace=workspace).exists()


def test_provenance_tags_are_refused_on_plain_deltas(workspace):
    with pytest.raises(ApplicationError, match="reserved"):
        deltas_create(workspace=workspace, items=[{"content": "x", "tags": ["kind:provenance"]}])


def test_embedding_is_idempotent_and_never_calls_the_embedder_for_done_rows(workspace, moments, monkeypatch):
    deltas = moments("one moment", "another moment", embed=False)
    calls = []
    original = HashingEmbedder.embed
    monkeypatch.setattr(HashingEmbedder, "embed", lambda self, texts: calls.append(list(texts)) or original(self, texts))
    ids = [delta.id for delta in deltas]

    assert deltas_embed(delta_ids=ids) == 2
    first = {d.id: list(d.embedding) for d in Delta.objects.filter(pk__in=ids)}
    assert deltas_embed(delta_ids=ids) == 0

    assert len(calls) == 1, "a second run must find nothing to do before calling the embedder"
    assert {d.id: list(d.embedding) for d in Delta.objects.filter(pk__in=ids)} == first
    assert set(Delta.objects.filter(pk__in=ids).values_list("embedding_model", flat=True)) == {"hashing:hashing-v3"}


# --- provenance ----------------------------------------------------------------------------------


def test_provenance_gets_its_tags_a_derived_level_and_the_centroid_of_its_children(workspace, moments):
    children = moments("rover wheel odometry", "rover drift correction", "rover field test")

    episode = provenance_create(workspace=workspace, title="Rover software spike", child_ids=[c.id[:10] for c in children])

    assert episode.level == 1
    assert episode.tags[:2] == ["kind:provenance", "provenance-level:1"]
    assert sorted(episode.from_ids) == sorted(c.id for c in children)
    expected = _mean([list(Delta.objects.get(pk=c.id).embedding) for c in children])
    assert _close(list(episode.provenance_embedding), expected)


def test_a_provenance_must_sit_strictly_above_its_children(workspace, moments, provenance):
    base = moments("a moment", "another moment")
    episode = provenance("An episode", base)
    marker = provenance("A question and its answer", base[:1], level=0, tags=["kind:qa-marker"])

    with pytest.raises(ApplicationError, match=f"{episode.id} is at level 1, so this provenance needs level 2") as error:
        provenance_create(workspace=workspace, title="Same level", child_ids=[episode.id, base[1].id], level=1)
    assert error.value.details["minimum_level"] == 2

    assert provenance_create(workspace=workspace, title="A topic", child_ids=[episode.id, marker.id]).level == 2
    assert provenance_create(workspace=workspace, title="Over a marker", child_ids=[marker.id]).level == 1
    with pytest.raises(ApplicationError, match="level 1 or higher"):
        provenance_create(workspace=workspace, title="Marker over marker", child_ids=[marker.id], level=0)


def test_provenance_refuses_unknown_children_and_foreign_ones(workspace, other_workspace, moments):
    (foreign,) = moments("elsewhere", target=other_workspace)

    with pytest.raises(ApplicationError, match="no delta"):
        provenance_create(workspace=workspace, title="Reaching across", child_ids=[foreign.id])
    with pytest.raises(ApplicationError, match="title"):
        provenance_create(workspace=workspace, title="  ", child_ids=[foreign.id])
    assert not Delta.objects.filter(workspace=workspace).exists()


def test_a_pending_centroid_is_filled_when_the_last_child_is_embedded_and_never_overwritten(workspace, moments):
    children = moments("wave equation notes", "dispersion relation", embed=False)
    episode = provenance_create(workspace=workspace, title="Waves", child_ids=[c.id for c in children])
    assert episode.provenance_embedding is None

    deltas_embed(delta_ids=[children[0].id])
    episode.refresh_from_db()
    assert episode.provenance_embedding is None, "a centroid of some children only would drift later"

    deltas_embed(delta_ids=[children[1].id])
    episode.refresh_from_db()
    centroid = list(episode.provenance_embedding)
    assert _close(centroid, _mean([list(Delta.objects.get(pk=c.id).embedding) for c in children]))

    # The embedding task embeds the provenance's own text and leaves its centroid alone.
    deltas_embed(delta_ids=[episode.id])
    episode.refresh_from_db()
    assert episode.embedding is not None and list(episode.provenance_embedding) == centroid
    assert list(episode.embedding) != centroid


def test_backfill_command_computes_missing_centroids_and_force_recomputes(workspace, moments, provenance):
    children = moments("orbital transfer", "hohmann burn")
    episode = provenance("Orbits", children)
    Delta.objects.filter(pk=episode.pk).update(provenance_embedding=None)

    out = StringIO()
    call_command("fathom", "lake", "backfill-centroids", "--workspace", workspace.slug, stdout=out)
    assert "wrote 1 centroid" in out.getvalue()
    episode.refresh_from_db()
    assert episode.provenance_embedding is not None

    assert provenance_centroids_refresh(workspace=workspace) == 0
    assert provenance_centroids_refresh(workspace=workspace, force=True) == 1


def test_parents_are_found_up_three_levels_through_the_tag_index(workspace, moments, provenance):
    base = moments("m1", "m2")
    episode = provenance("Episode", base)
    topic = provenance("Topic", [episode])
    era = provenance("Era", [topic])
    beyond = provenance("Beyond the era", [era], level=4)

    found = provenance_parents(workspace=workspace, delta_ids=[base[0].id])

    assert [(a.delta.id, a.depth) for a in found] == [(episode.id, 1), (topic.id, 2), (era.id, 3)]
    assert beyond.id not in {a.delta.id for a in found}


def test_reembed_command_filters_and_shows_progress(workspace, moments):
    notes = moments("note one", "note two", embed=False)
    (other,) = moments("a task", tags=["kind:task"], embed=False)
    out, err = StringIO(), StringIO()

    call_command("fathom", "lake", "reembed", "--workspace", workspace.slug, "--kind", "note", stdout=out, stderr=err)

    assert "embedded 2 delta(s)" in out.getvalue()
    assert "2/2 100%" in err.getvalue()
    assert all(d.embedding is not None for d in Delta.objects.filter(pk__in=[n.id for n in notes]))
    assert Delta.objects.get(pk=other.id).embedding is None

    Delta.objects.filter(pk=notes[0].id).update(embedding_model="openai:old-model")
    out = StringIO()
    call_command("fathom", "lake", "reembed", "--workspace", workspace.slug, "--stale", stdout=out, stderr=StringIO())
    assert "embedded 2 delta(s)" in out.getvalue()  # the stale note and the never-embedded task
