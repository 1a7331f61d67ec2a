"""The world model's tables, bootstrap and configuration (seed 002, T09-T13)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, ProgrammingError, connection, transaction
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from fathom.errors import ApplicationError
from fathom.models import Workspace
from fathom.services import workspace_default_ensure
from festinger import cache
from festinger.bootstrap import SEED_DIMENSIONS, bootstrap_workspace, english_words
from festinger.models import Concept, Edge, Source, WorldConfig
from festinger.schedules import RESOLUTION_TASK, resolution_task_name
from festinger.services import config_update, world_ensure


def test_the_shipped_dictionary_has_at_least_ten_thousand_common_words():
    words = english_words()
    assert len(words) >= 10_000
    assert len(set(words)) == len(words)
    assert {"please", "update", "instead", "container"} <= set(words)
    assert "gnommoweb" not in words and "fastapi" not in words


def test_bootstrap_seeds_dimensions_with_roots_and_the_dictionary_once(workspace):
    first = bootstrap_workspace(workspace=workspace)
    assert first["dimension_roots"] == 6
    assert first["concepts_added"] == len(english_words()) + 6 - len(
        set(english_words()) & {t for t, _, _ in SEED_DIMENSIONS})
    for token, _question, is_isa in SEED_DIMENSIONS:
        root = Edge.objects.get(workspace=workspace, concept__token=token)
        assert root.is_root and root.is_isa == is_isa and root.confidence == 1.0
    please = Concept.objects.get(workspace=workspace, token="please")
    assert please.is_common and please.saliency == 0 and please.novelty == 0 and please.encounter_count == 0

    again = bootstrap_workspace(workspace=workspace)
    assert again == {"concepts_added": 0, "dimension_roots": 6}
    assert Edge.objects.filter(workspace=workspace).count() == 6


@pytest.mark.django_db(transaction=True)
def test_a_bootstrap_into_a_table_the_planner_believes_empty_tells_the_planner(workspace):
    # Given statistics taken while the concepts table was empty (autovacuum after a flush, or never)
    with connection.cursor() as cursor:
        try:
            cursor.execute("UPDATE pg_class SET reltuples = 0 WHERE oid = 'festinger_concept'::regclass")
        except ProgrammingError:
            pytest.skip("the test database's user may not edit pg_class")

    bootstrap_workspace(workspace=workspace)

    # Then the planner expects the dictionary, not one row (which planned the admin's conflict list as
    # nested loops over every concept, four deep)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) SELECT * FROM festinger_concept")
        (plan,) = cursor.fetchone()
    assert (plan[0] if isinstance(plan, list) else json.loads(plan)[0])["Plan"]["Plan Rows"] >= len(english_words())


def test_bootstrap_keeps_counts_of_concepts_seen_before(workspace):
    Concept.objects.create(workspace=workspace, token="update", encounter_count=7, saliency=0.0)
    bootstrap_workspace(workspace=workspace)
    update = Concept.objects.get(workspace=workspace, token="update")
    assert update.encounter_count == 7 and update.is_common


def test_the_bootstrap_command_is_idempotent_and_creates_the_configuration(workspace, other_workspace):
    call_command("fathom", "festinger", "bootstrap", "--workspace", workspace.slug)
    assert WorldConfig.objects.filter(workspace=workspace).exists()
    assert not Concept.objects.filter(workspace=other_workspace).exists()
    call_command("fathom", "festinger", "bootstrap")
    call_command("fathom", "festinger", "bootstrap")
    for ws in (workspace, other_workspace):
        assert Concept.objects.filter(workspace=ws, is_common=True).count() == len(english_words())
        assert Edge.objects.filter(workspace=ws).count() == 6


def test_the_database_holds_one_parent_per_concept_and_dimension(workspace):
    bootstrap_workspace(workspace=workspace, dictionary=False)
    kind = Concept.objects.get(workspace=workspace, token="type")
    gnommoweb, repo, container = (Concept.objects.create(workspace=workspace, token=t)
                                  for t in ("gnommoweb", "repo", "container"))
    fields = {"workspace": workspace, "concept": gnommoweb, "dimension": kind, "is_isa": True, "confidence": 0.9,
              "last_confirmed": timezone.now(), "source": Source.CLOUD_LLM}
    Edge.objects.create(parent=repo, **fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        Edge.objects.create(parent=container, **fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        Edge.objects.create(parent=gnommoweb, **{**fields, "dimension": repo})  # a self-reference that is no root
    with pytest.raises(IntegrityError), transaction.atomic():
        Edge.objects.create(parent=repo, **{**fields, "concept": container, "confidence": 1.5})
    with pytest.raises(IntegrityError), transaction.atomic():
        Concept.objects.create(workspace=workspace, token="repo")


def test_world_ensure_creates_the_configuration_and_its_beat_entry_once(workspace):
    config = world_ensure(workspace=workspace)
    assert (config.saliency_read_threshold, config.saliency_write_threshold) == (0.5, 1.2)
    assert (config.recollection_confidence_floor, config.recollection_recency_days) == (0.6, 90)
    assert config.resolution_schedule == "0 2 * * *"
    assert (config.writer_role, config.resolver_role) == ("writer", "resolver")
    task = PeriodicTask.objects.get(name=resolution_task_name(workspace_id=workspace.pk))
    assert task.task == RESOLUTION_TASK and task.queue == "maintenance" and task.enabled
    assert json.loads(task.kwargs) == {"workspace_id": workspace.pk}
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_week) == ("0", "2", "*")
    assert world_ensure(workspace=workspace).pk == config.pk
    assert Concept.objects.filter(workspace=workspace, is_common=True).count() == len(english_words())


def test_changing_the_schedule_moves_the_beat_entry(workspace):
    config = world_ensure(workspace=workspace)
    config_update(config=config, resolution_schedule="*/15  6-18 * * 1-5", resolution_enabled=False)
    task = PeriodicTask.objects.get(name=resolution_task_name(workspace_id=workspace.pk))
    crontab = task.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_month, crontab.month_of_year, crontab.day_of_week) == (
        "*/15", "6-18", "*", "*", "1-5")
    assert not task.enabled
    assert WorldConfig.objects.get(workspace=workspace).resolution_schedule == "*/15 6-18 * * 1-5"


def test_the_resolution_schedule_goes_through_the_one_cron_validator(workspace):
    config = world_ensure(workspace=workspace)
    with pytest.raises(ApplicationError, match=r"resolution_schedule: schedule '0 25 \* \* \*': the hour field '25'"):
        config_update(config=config, resolution_schedule="0 25 * * *")
    config_update(config=world_ensure(workspace=workspace), resolution_schedule="@daily")
    assert WorldConfig.objects.get(workspace=workspace).resolution_schedule == "0 0 * * *"


@pytest.mark.parametrize("changes, message", [
    ({"resolution_schedule": "every night"}, "resolution_schedule"),
    ({"resolution_schedule": "0 25 * * *"}, "resolution_schedule"),
    ({"saliency_write_threshold": 0.1}, "saliency_write_threshold"),
    ({"recollection_confidence_floor": 2}, "recollection_confidence_floor"),
    ({"resolver_role": "Not A Role"}, "resolver_role"),
    ({"colour": "blue"}, "unknown"),
])
def test_an_invalid_configuration_is_refused_and_the_schedule_stays(workspace, changes, message):
    config = world_ensure(workspace=workspace)
    with pytest.raises(ApplicationError, match=message):
        config_update(config=config, **changes)
    assert WorldConfig.objects.get(workspace=workspace).resolution_schedule == "0 2 * * *"
    assert PeriodicTask.objects.get(name=resolution_task_name(workspace_id=workspace.pk)).crontab.hour == "2"


def test_the_commands_store_a_fact_and_run_the_job(workspace, scripted_llm):
    from io import StringIO

    from django.core.management.base import CommandError

    from festinger.models import Conflict

    out = StringIO()
    call_command("fathom", "festinger", "iknowthat", "gnommoweb -isa repo", "--workspace", workspace.slug, stdout=out)
    call_command("fathom", "festinger", "iknowthat", "gnommoweb -isa container", "--workspace", workspace.slug,
                 stdout=out)
    assert "stored: gnommoweb IN repo [type]" in out.getvalue() and "(isa_isa)" in out.getvalue()
    with pytest.raises(CommandError, match="-isa <parent>"):
        call_command("fathom", "festinger", "iknowthat", "gnommoweb is a repo", "--workspace", workspace.slug)
    scripted_llm.reply('{"decision": "dismiss", "reasoning": "noise"}')
    out = StringIO()
    call_command("fathom", "festinger", "resolve", "--workspace", workspace.slug, stdout=out)
    assert "finished: 1 processed, 0 resolved, 1 dismissed, 0 failed" in out.getvalue()
    assert Conflict.objects.get(workspace=workspace).status == "dismissed"


def test_migrate_bootstraps_every_existing_workspace(workspace):
    """`fathom up` migrates first: that is when existing workspaces get their world."""
    assert not WorldConfig.objects.filter(workspace=workspace).exists()
    call_command("migrate", verbosity=0)
    assert WorldConfig.objects.filter(workspace=workspace).exists()
    assert Edge.objects.filter(workspace=workspace).count() == 6
    assert Concept.objects.filter(workspace=workspace, is_common=True).count() == len(english_words())


def test_a_configuration_change_reaches_every_process_cache(workspace, django_capture_on_commit_callbacks):
    from festinger import cache

    config = world_ensure(workspace=workspace)
    before = cache.world(workspace.pk).settings.read_threshold
    with django_capture_on_commit_callbacks(execute=True):
        config_update(config=config, saliency_read_threshold=0.9, saliency_write_threshold=2.0)
    try:
        assert (before, cache.world(workspace.pk).settings.read_threshold) == (0.5, 0.9)
    finally:
        cache.forget(workspace.pk)


# --- bootstrapped as the workspace is created ---------------------------------------------------------------


def test_a_workspace_created_by_the_cli_or_as_the_default_has_its_world_at_once(db):
    call_command("fathom", "workspace", "create", "fresh-one", stdout=StringIO())
    fresh = Workspace.objects.get(slug="fresh-one")
    default = workspace_default_ensure()  # what `fathom up` (make run) does after migrating

    for workspace in (fresh, default):
        assert WorldConfig.objects.filter(workspace=workspace).exists()
        assert Concept.objects.filter(workspace=workspace, token="please", is_common=True).exists()
        assert cache.world(workspace.pk) is not None  # active: the first model call is enriched and counted
        cache.forget(workspace.pk)


def test_a_workspace_added_in_admin_has_its_world_at_once(admin_client):
    response = admin_client.post(reverse("admin:fathom_workspace_add"), {
        "slug": "from-admin", "name": "From admin", "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0"})

    assert response.status_code == 302, response.content[:2000]
    assert WorldConfig.objects.filter(workspace__slug="from-admin").exists()
