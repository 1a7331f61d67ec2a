"""The recollection priority (seed 002, "Saliency vs novelty" and "Saliency Decay"): a concept's saliency
decays with the time since it was last seen (`last_seen`, halving every `saliency_half_life_days`) and
its novelty lifts it, so a concept not seen for long is deprioritised, resurfaces the moment it is seen
again, and a confirmed project-specific name is recalled even when it rarely appears."""

from datetime import timedelta

import pytest
from django.utils import timezone

from festinger import cache
from festinger.cache import counts_flush
from festinger.cache.model import priority
from festinger.models import Concept
from festinger.recollection import recollection_for
from festinger.services import config_update, insert_fact, world_ensure


def known(workspace, token, *, count, days_ago=0.0, novelty=0.0):
    """`token` has an edge, was seen `count` times, last `days_ago` days ago."""
    insert_fact(workspace=workspace, concept=token, parent="service", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    Concept.objects.filter(workspace=workspace, token=token).update(
        encounter_count=count, novelty=novelty, last_seen=timezone.now() - timedelta(days=days_ago))
    cache.world_reload(workspace.pk)


def read_only(workspace, text):
    """The recollection of a text already counted (a conversation's earlier message): nothing counted now."""
    return recollection_for(workspace_id=workspace.pk, texts=[text], counted=[])


def test_the_priority_halves_every_half_life_and_novelty_adds_to_it():
    fresh = priority(50, age_seconds=0, novelty=0.0, half_life_days=30)
    assert priority(50, age_seconds=30 * 86400, novelty=0.0, half_life_days=30) == pytest.approx(fresh / 2)
    assert priority(50, age_seconds=60 * 86400, novelty=0.0, half_life_days=30) == pytest.approx(fresh / 4)
    assert priority(1, age_seconds=0, novelty=1.0, half_life_days=30) == 1.0


def test_a_concept_not_seen_for_long_is_not_recalled_until_it_is_seen_again(world):
    known(world, "gnommoweb", count=50, days_ago=120)  # ln 50 = 3.9, four half-lives: 0.24 < 0.5
    known(world, "zorblax", count=50, days_ago=1)

    assert read_only(world, "gnommoweb and zorblax").recalled == ("zorblax",)
    # seen again (a new message, counted): at full saliency at once
    assert recollection_for(workspace_id=world.pk, text="gnommoweb again").recalled == ("gnommoweb",)


def test_the_more_recently_seen_concept_comes_first_when_the_block_is_full(world):
    config_update(config=world_ensure(workspace=world), recollection_max_concepts=1)
    known(world, "oldthing", count=50, days_ago=40)
    known(world, "newthing", count=20, days_ago=0)  # seen less often, but today

    recollection = read_only(world, "oldthing newthing")

    assert [token for token, _priority in recollection.salient] == ["newthing", "oldthing"]
    assert recollection.recalled == ("newthing",)


def test_a_novel_concept_is_recalled_at_its_first_mention(world):
    known(world, "gnommoweb", count=1, novelty=1.0)  # confirmed by the write path, rarely mentioned
    known(world, "zorblax", count=1, novelty=0.0)

    assert read_only(world, "gnommoweb and zorblax").recalled == ("gnommoweb",)


def test_the_half_life_is_configured_per_workspace(world):
    config_update(config=world_ensure(workspace=world), saliency_half_life_days=365)
    known(world, "gnommoweb", count=50, days_ago=120)  # reloads the world, with its configuration

    assert read_only(world, "gnommoweb").recalled == ("gnommoweb",)


def test_when_a_concept_was_last_seen_reaches_every_process_through_the_flush(world):
    known(world, "gnommoweb", count=5, days_ago=200)
    loaded = cache.world(world.pk)
    recollection_for(workspace_id=world.pk, text="gnommoweb")  # counted here: pushed, then flushed
    loaded.push()
    counts_flush()
    cache.forget(world.pk)  # another process: what it knows comes from PostgreSQL and the totals

    row = cache.world(world.pk).soas_by_token["gnommoweb"]
    assert timezone.now().timestamp() - row.last_seen < 3600
    assert read_only(world, "gnommoweb").recalled == ("gnommoweb",)
