"""The cache across processes: a write in one process is read by another at its next read, and
encounter counts from several processes reach PostgreSQL without losing one."""

import json
import subprocess
import sys
import time

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from fathom import channels
from fathom.redis_client import get_redis
from festinger import cache
from festinger.cache import flush, keys, model
from festinger.models import Concept, Edge
from festinger.services import edge_remove, insert_fact, world_ensure
from tests.conftest import REPO_ROOT, wait_for, worker_env

pytestmark = [pytest.mark.slow]

# A second process with Django set up against the same database and Redis, reading and counting on
# command from stdin.
PROCESS = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fathom.settings")
import django
django.setup()
from festinger.recollection import recollection_for
workspace_id = int(sys.argv[1])
for line in sys.stdin:
    command, _, text = line.rstrip("\\n").partition(" ")
    if command == "read":
        print(json.dumps(recollection_for(workspace_id=workspace_id, text=text, learn=False).block), flush=True)
    elif command == "count":
        recollection_for(workspace_id=workspace_id, text=text)
        print("null", flush=True)
"""


class OtherProcess:
    def __init__(self, workspace_id):
        self.process = subprocess.Popen([sys.executable, "-c", PROCESS, str(workspace_id)], cwd=REPO_ROOT,
                                        env=worker_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send(self, command, text):
        self.process.stdin.write(f"{command} {text}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def exit(self):
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0


@pytest.fixture
def world(transactional_db, workspace):
    world_ensure(workspace=workspace)
    Concept.objects.update_or_create(workspace=workspace, token="gnommoweb", defaults={"encounter_count": 10})
    yield workspace
    cache.forget(workspace.pk)


def test_a_write_in_one_process_is_read_by_another_at_its_next_read(world):
    other = OtherProcess(world.pk)
    try:
        assert other.send("read", "gnommoweb").startswith("<recollection>\n? gnommoweb: no recollection")

        edge = insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                           confidence=0.9, source="gutask")
        assert other.send("read", "gnommoweb") == "<recollection>\ngnommoweb: [type] repo\n</recollection>"

        insert_fact(workspace=world, concept="gnommoweb", parent="container", dimension="type", is_isa=True,
                    confidence=0.9, source="inferred")
        assert other.send("read", "gnommoweb") == "<recollection>\ngnommoweb: [type?] repo\n</recollection>"

        edge_remove(edge=Edge.objects.get(pk=edge.pk), reason="test", actor="operator:test")
        assert other.send("read", "gnommoweb").startswith("<recollection>\n? gnommoweb: no recollection")
    finally:
        other.exit()


def test_the_migration_makes_the_flush_a_beat_entry_every_30_seconds_and_keeps_an_operators_edit(db):
    from importlib import import_module

    from django.apps import apps
    from django_celery_beat.models import IntervalSchedule

    migration = import_module("festinger.migrations.0002_counts_flush_schedule")
    PeriodicTask.objects.filter(task=cache.FLUSH_TASK).delete()

    migration.create_flush_schedule(apps, None)
    entry = PeriodicTask.objects.get(task=cache.FLUSH_TASK)
    assert (entry.interval.every, entry.interval.period, entry.enabled, entry.queue) == (
        30, "seconds", True, "maintenance")

    entry.interval = IntervalSchedule.objects.get_or_create(every=60, period="seconds")[0]
    entry.save()
    migration.create_flush_schedule(apps, None)
    assert PeriodicTask.objects.get(task=cache.FLUSH_TASK).interval.every == 60


@pytest.mark.worker
def test_counts_from_several_processes_reach_the_database_without_losing_one(world, celery_worker):
    others = [OtherProcess(world.pk) for _ in range(3)]
    try:
        for _round in range(4):
            for other in others:
                other.send("count", " ".join(["zorblax"] * 25) + " gnommoweb the, the")
    finally:
        for other in others:
            other.exit()  # pushes what it counted
    from festinger.recollection import recollection_for

    recollection_for(workspace_id=world.pk, text="zorblax zorblax gnommoweb the")
    cache.push_all()

    from fathom.celery import app

    app.send_task("maintenance.festinger_counts_flush")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        counts = dict(Concept.objects.filter(workspace=world, token__in=["zorblax", "gnommoweb", "the"])
                      .values_list("token", "encounter_count"))
        if counts.get("zorblax") == 3 * 4 * 25 + 2:
            break
        time.sleep(0.2)
    # "the" is a common word: counted by each process's Lexicon, not as a string per occurrence.
    assert counts == {"zorblax": 302, "gnommoweb": 10 + 3 * 4 + 1, "the": 3 * 4 * 2 + 1}
    assert Concept.objects.get(workspace=world, token="zorblax").saliency == pytest.approx(5.7104, abs=1e-3)

    # A second flush has nothing left to add.
    assert world.pk not in cache.counts_flush()
    assert Concept.objects.get(workspace=world, token="zorblax").encounter_count == 302


def test_a_common_word_the_world_learns_about_keeps_every_count(world):
    """Common words are counted apart (festinger._words.Lexicon); when one becomes a concept with an edge,
    what was counted before and after reaches the database, and from then on it can be salient."""
    from festinger.recollection import recollection_for

    recollection_for(workspace_id=world.pk, text="state of the state")
    insert_fact(workspace=world, concept="state", parent="region", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    cache.note_write(world.pk)
    recollection_for(workspace_id=world.pk, text="state")
    held = cache.world(world.pk)
    assert "state" not in held.common and held.counted["state"] == 1
    cache.push_all()
    cache.counts_flush()
    assert Concept.objects.get(workspace=world, token="state").encounter_count == 3


def test_an_incremental_reload_ends_where_a_full_load_starts(world):
    """After inserts, a conflict, a move, a removal and a new dimension, the world that reloaded only
    what changed holds exactly what a fresh load reads."""
    from festinger.services import dimension_ensure, edge_move

    insert_fact(workspace=world, concept="dobby", parent="agent_pool", dimension="membership", is_isa=False,
                confidence=0.9, source="gutask")
    held = cache.World(world.pk)
    held.load()

    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    insert_fact(workspace=world, concept="gnommoweb", parent="container", dimension="type", is_isa=True,
                confidence=0.9, source="inferred")
    insert_fact(workspace=world, concept="dobby", parent="python", dimension="tech", is_isa=False,
                confidence=0.9, source="gutask")
    insert_fact(workspace=world, concept="state", parent="region", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")  # a common word
    moved = Edge.objects.get(workspace=world, concept__token="gnommoweb", dimension__token="type")
    edge_move(edge=moved, dimension=dimension_ensure(workspace=world, token="artifact-type", is_isa=True),
              reason="test", actor="operator:test")
    edge_remove(edge=Edge.objects.get(workspace=world, concept__token="dobby", dimension__token="membership"),
                reason="test", actor="operator:test")
    assert held.edges("gnommoweb") == () and held.edges("dobby")[0].parent == "agent_pool"  # not yet
    held.stale = True  # what hearing of the writes on the changes channel does
    held.sync()

    fresh = cache.World(world.pk)
    fresh.load()
    assert held.urd_by_concept == fresh.urd_by_concept
    assert held.urd_by_concept_dim == fresh.urd_by_concept_dim
    assert (held.dimensions, held.pending_conflicts, held.common) == (
        fresh.dimensions, fresh.pending_conflicts, fresh.common)
    assert "state" not in held.common and held.edges("gnommoweb")[0].dimension == "artifact-type"


def test_a_concept_is_asked_about_once_until_the_retry_interval_passes(db, workspace, monkeypatch):
    world_ensure(workspace=workspace)
    world = cache.world(workspace.pk)
    salient = [("gnommoweb", 3.0), ("faint", 0.1)]
    clock = [1000.0]
    monkeypatch.setattr(model.time, "monotonic", lambda: clock[0])

    assert world.to_write(salient) == ["gnommoweb"]  # below the write threshold: never
    assert world.to_write(salient) == []  # asked already
    clock[0] += cache.WRITE_RETRY_SECONDS - 1
    assert world.to_write(salient) == []
    clock[0] += 2  # the write came to nothing: ask again
    assert world.to_write(salient) == ["gnommoweb"]


def test_a_warm_read_sends_nothing_to_redis(world, monkeypatch):
    from redis.client import Pipeline, Redis

    from festinger.recollection import recollection_for

    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    recollection_for(workspace_id=world.pk, text="gnommoweb")  # first use: subscribes and loads
    sent = []
    with monkeypatch.context() as patched:
        patched.setattr(Redis, "execute_command", lambda self, *args, **options: sent.append(args))
        patched.setattr(Pipeline, "execute", lambda self, raise_on_error=True: sent.append(self.command_stack))
        block = recollection_for(workspace_id=world.pk, text="Please update gnommoweb, zorblax and gnommoweb").block

    assert block.startswith("<recollection>\ngnommoweb: [type] repo\n") and sent == []


def test_a_dropped_subscription_reloads_every_world_at_the_next_read(world):
    from festinger.recollection import recollection_for

    assert recollection_for(workspace_id=world.pk, text="gnommoweb", learn=False).block.startswith(
        "<recollection>\n? gnommoweb: no recollection")
    get_redis().client_kill_filter(_type="pubsub")  # Redis closes every subscription: this process's drops
    # A write this process did not hear of: committed while it was not listening.
    Edge.objects.create(workspace=world, concept=Concept.objects.get(workspace=world, token="gnommoweb"),
                        parent=Concept.objects.get_or_create(workspace=world, token="repo")[0],
                        dimension=Concept.objects.get(workspace=world, token="type"), is_isa=True, confidence=0.9,
                        last_confirmed=timezone.now(), source="gutask")

    assert recollection_for(workspace_id=world.pk, text="gnommoweb", learn=False).block == (
        "<recollection>\ngnommoweb: [type] repo\n</recollection>")


def test_a_world_checked_current_answers_from_memory_though_a_write_is_heard_meanwhile(
        world, django_assert_num_queries):
    # The proxy's event loop: the world said it is current (`world_held`), so within from_memory() it is
    # answered as held; a write another thread hears meanwhile sends nothing to the database until after.
    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    # the insert's notice may be heard after a first read: read until the world is current
    wait_for(lambda: cache.world(world.pk) is not None and cache.world_held(world.pk), timeout=5)
    loaded = cache.world(world.pk)
    assert cache.world_held(world.pk)
    with channels.from_memory():
        cache.note_write(world.pk)
        with django_assert_num_queries(0):
            assert cache.world(world.pk) is loaded and loaded.stale

    assert not cache.world_held(world.pk)  # the next use reads the write
    assert cache.world(world.pk) is loaded and not loaded.stale


@pytest.mark.worker
def test_a_flush_that_dies_after_its_commit_does_not_add_the_batch_twice(world, celery_worker, monkeypatch):
    from fathom.celery import app
    from fathom.redis_client import get_redis
    from festinger.recollection import recollection_for

    recollection_for(workspace_id=world.pk, text="zorblax zorblax zorblax gnommoweb")
    cache.push_all()
    batch_add = flush._batch_add

    def dies_after_the_commit(workspace_id, *args):
        totals = batch_add(workspace_id, *args)
        if workspace_id == world.pk:  # other tests' workspaces may have counts waiting too
            raise SystemExit("the worker died")
        return totals

    monkeypatch.setattr(flush, "_batch_add", dies_after_the_commit)
    with pytest.raises(SystemExit):
        cache.counts_flush()
    monkeypatch.undo()
    assert Concept.objects.get(workspace=world, token="zorblax").encounter_count == 3
    assert get_redis().exists(keys.DRAINING.format(ws=world.pk))  # Redis still holds the batch

    recollection_for(workspace_id=world.pk, text="zorblax")  # counted meanwhile: the next batch
    cache.push_all()
    app.send_task("maintenance.festinger_counts_flush")  # the batch left behind goes first: added already
    wait_for(lambda: not get_redis().exists(keys.DRAINING.format(ws=world.pk)))
    assert Concept.objects.get(workspace=world, token="zorblax").encounter_count == 3
    app.send_task("maintenance.festinger_counts_flush")  # then what was counted meanwhile
    wait_for(lambda: Concept.objects.get(workspace=world, token="zorblax").encounter_count == 4)

    counts = dict(Concept.objects.filter(workspace=world, token__in=["zorblax", "gnommoweb"])
                  .values_list("token", "encounter_count"))
    assert counts == {"zorblax": 4, "gnommoweb": 11}
