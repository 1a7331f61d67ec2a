"""The hashing embedder: stopwords out, word forms folded, collisions spread (hashing-v2), the
character n-grams of each stem (hashing-v3, the default); and the re-embed command that migrates a
lake embedded by an earlier version, or by hashing to the local model."""

import re
from io import StringIO

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django_celery_beat.models import PeriodicTask

from lake.embedders import HashingEmbedder, get_embedder
from lake.models import Delta
from lake.tasks import reembed_stale


def _similarity(embedder, first: str, second: str) -> float:
    a, b = embedder.embed([first, second])
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_stopwords_alone_make_no_two_texts_alike():
    v2, v1 = HashingEmbedder(384, model="hashing-v2"), HashingEmbedder(384, model="hashing-v1")
    query, note = "what do we have and what does it", "what the team did with it and what we have now"

    assert _similarity(v1, query, note) > 0.5  # v1: the small words alone made them close
    assert abs(_similarity(v2, "rover wheel " + query, "garden tomato " + note)) < 0.05


def test_word_forms_fold_to_one_stem():
    v2, v1 = HashingEmbedder(384, model="hashing-v2"), HashingEmbedder(384, model="hashing-v1")

    assert _similarity(v2, "calibrated encoders", "calibrating the encoder") > 0.99
    assert _similarity(v1, "calibrated encoders", "calibrating the encoder") < 0.3


def test_a_chance_collision_weighs_a_quarter_of_a_shared_word():
    v2 = HashingEmbedder(8, model="hashing-v2")  # 8 buckets: different words collide often
    shared = _similarity(v2, "saxophone", "saxophone")
    others = [abs(_similarity(v2, "saxophone", word)) for word in ("volcano", "penguin", "opera", "glacier", "tuba")]

    assert shared > 0.99 and max(others) < 0.75


def test_a_misspelled_word_stays_near_the_word_it_meant():
    v3, v2 = HashingEmbedder(384, model="hashing-v3"), HashingEmbedder(384, model="hashing-v2")
    note = "fed the sourdough starter with rye flour"

    assert _similarity(v3, "sourdugh startr", note) > 0.3
    assert abs(_similarity(v2, "sourdugh startr", note)) < 0.05  # v2: whole stems only, no word in common


def test_a_word_form_the_stemmer_does_not_fold_and_a_compound_share_their_ngrams():
    v3, v2 = HashingEmbedder(384, model="hashing-v3"), HashingEmbedder(384, model="hashing-v2")

    assert _similarity(v3, "trialled", "trial") > 0.3 and abs(_similarity(v2, "trialled", "trial")) < 0.05
    assert _similarity(v3, "wheelbase", "wheel") > 0.3 and abs(_similarity(v2, "wheelbase", "wheel")) < 0.05


def test_ngrams_are_of_stems_so_a_shared_suffix_makes_no_two_words_alike():
    v3 = HashingEmbedder(384, model="hashing-v3")

    # As written, "anything" and "thing" share "thing>", "hing>", "ing>", ...; their stems do not.
    assert abs(_similarity(v3, "anything", "First thing: calibrating the battery and the cable")) < 0.1
    assert abs(_similarity(v3, "photographing", "calibrating")) < 0.1


def test_an_unknown_hashing_model_is_refused():
    with pytest.raises(ImproperlyConfigured, match="hashing-v3"):
        HashingEmbedder(384, model="hashing-v9")


def test_reembed_stale_migrates_hashing_v2_rows_to_the_default_once(workspace, moments, settings):
    settings.EMBEDDING_MODEL = "hashing-v2"
    notes = moments("calibrated the wheel encoders", "fed the sourdough starter")
    before = {d.id: list(d.embedding) for d in Delta.objects.filter(pk__in=[n.id for n in notes])}

    settings.EMBEDDING_MODEL = "hashing-v3"
    out = StringIO()
    call_command("fathom", "lake", "reembed", "--workspace", workspace.slug, "--stale", stdout=out, stderr=StringIO())

    assert "embedded 2 delta(s)" in out.getvalue()
    rows = Delta.objects.filter(pk__in=[n.id for n in notes])
    assert {d.embedding_model for d in rows} == {"hashing:hashing-v3"}
    assert all(list(d.embedding) != before[d.id] for d in rows)


def test_reembed_stale_migrates_hashing_v1_rows_once(workspace, moments, settings):
    settings.EMBEDDING_MODEL = "hashing-v1"
    notes = moments("calibrated the wheel encoders", "what we did with it")
    assert set(Delta.objects.filter(pk__in=[n.id for n in notes]).values_list("embedding_model", flat=True)) == {
        "hashing:hashing-v1"}
    before = {d.id: list(d.embedding) for d in Delta.objects.filter(pk__in=[n.id for n in notes])}

    settings.EMBEDDING_MODEL = "hashing-v2"
    out = StringIO()
    call_command("fathom", "lake", "reembed", "--workspace", workspace.slug, "--stale", stdout=out, stderr=StringIO())
    again = StringIO()
    call_command("fathom", "lake", "reembed", "--workspace", workspace.slug, "--stale", stdout=again,
                 stderr=StringIO())

    assert "embedded 2 delta(s)" in out.getvalue()
    assert "embedded 0 delta(s)" in again.getvalue()  # idempotent: nothing stale is left
    rows = Delta.objects.filter(pk__in=[n.id for n in notes])
    assert {d.embedding_model for d in rows} == {"hashing:hashing-v2"}
    assert all(list(d.embedding) != before[d.id] for d in rows)


def test_beat_migrates_a_lake_to_a_new_embedder_in_bounded_batches(workspace, moments, settings):
    settings.EMBEDDING_MODEL = "hashing-v1"
    notes = moments(*[f"kiln firing log {i}" for i in range(10)])
    (waiting,) = moments("not embedded yet", embed=False)
    settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE = "hashing-v2", 1  # batches of 8
    entry = PeriodicTask.objects.get(name="memory.reembed_stale")  # made when the test database was migrated

    written = [reembed_stale.apply().get() for _ in range(3)]

    assert (entry.task, entry.queue, entry.enabled) == ("memory.reembed_stale", "memory", True)
    assert written == [8, 2, 0]
    rows = Delta.objects.filter(pk__in=[n.id for n in notes])
    assert {d.embedding_model for d in rows} == {"hashing:hashing-v2"}
    assert Delta.objects.get(pk=waiting.id).embedding is None  # the embedding task's, not the migration's


def test_a_hashing_lake_moves_to_the_local_model_with_reembed_stale(workspace, moments, settings):
    notes = moments("Priya repaired the brake pads on her bicycle", "the sourdough starter needs feeding")
    settings.EMBEDDER, settings.EMBEDDING_MODEL = "local", "all-MiniLM-L6-v2"

    out = StringIO()
    call_command("fathom", "lake", "reembed", "--workspace", workspace.slug, "--stale", stdout=out, stderr=StringIO())

    assert "embedded 2 delta(s)" in out.getvalue()
    rows = Delta.objects.filter(pk__in=[n.id for n in notes])
    assert {d.embedding_model for d in rows} == {"local:all-MiniLM-L6-v2"}
    bike = Delta.objects.get(pk=notes[0].id)
    (question,) = get_embedder().embed(["when did someone fix her bike?"])
    assert sum(x * y for x, y in zip(question, bike.embedding, strict=True)) > 0.5  # a meaning, not shared words


@pytest.mark.parametrize(("embedder", "model", "dimensions", "said"), [
    ("hashing", "hashing-v9", 384, "FATHOM_EMBEDDER=hashing runs hashing-v1, hashing-v2, hashing-v3; "
                                   "FATHOM_EMBEDDING_MODEL is 'hashing-v9'"),
    ("local", "all-MiniLM-L12-v2", 384, "FATHOM_EMBEDDER=local runs all-MiniLM-L6-v2"),
    ("local", "all-MiniLM-L6-v2", 768, "set EMBEDDING_DIMENSIONS=384 (it is 768)"),
])
def test_a_misconfigured_embedder_stops_every_command_at_its_start(settings, embedder, model, dimensions, said):
    settings.EMBEDDER, settings.EMBEDDING_MODEL, settings.EMBEDDING_DIMENSIONS = embedder, model, dimensions
    with pytest.raises(SystemCheckError, match=re.escape(said)):
        call_command("check")


def test_a_configured_embedder_passes_the_check(settings):
    settings.EMBEDDER, settings.EMBEDDING_MODEL = "hashing", "hashing-v2"
    call_command("check", stdout=StringIO())
