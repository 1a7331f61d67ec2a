"""Trace retention: the hourly maintenance task deletes the trace events older than
FATHOM_TRACE_RETENTION_DAYS in every workspace, in bounded batches, and keeps the rest."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from fathom.schedules import TRACES_PRUNE_TASK
from fathom.tracing.models import TraceEvent
from fathom.tracing.services import retention_start, traces_prune


def events(workspace, age: timedelta, count: int = 1) -> list[int]:
    """`count` model-call end events of `workspace` that happened `age` ago; their ids."""
    at = timezone.now() - age
    rows = TraceEvent.objects.bulk_create(
        TraceEvent(workspace=workspace, at=at, kind="llm.call.completed", name="llm.call", status="ok",
                   trace_id=uuid.uuid4().hex, span_id=uuid.uuid4().hex[:16], input_tokens=10)
        for _ in range(count))
    return [row.pk for row in rows]


def run_task(**kwargs) -> dict:
    from fathom.celery import app

    return app.send_task(TRACES_PRUNE_TASK, kwargs=kwargs).get(timeout=30)


def remaining() -> set[int]:
    return set(TraceEvent.objects.values_list("pk", flat=True))


@pytest.mark.worker
def test_the_task_deletes_events_older_than_the_retention_in_every_workspace_and_keeps_newer_ones(
        transactional_db, celery_worker, workspace, other_workspace):
    # given: events 31 and 400 days old and 29 days old / just now, in two workspaces
    old = events(workspace, timedelta(days=31)) + events(other_workspace, timedelta(days=400), 2)
    kept = (events(workspace, timedelta(days=29)) + events(workspace, timedelta(0))
            + events(other_workspace, timedelta(days=29), 2))

    # when: the worker runs the task with the default retention (30 days)
    result = run_task()

    # then: only the old ones are gone, in every workspace
    assert result["deleted"] == 3
    assert remaining() == set(kept)
    assert result["before"] == retention_start(days=30).isoformat()
    assert not set(old) & remaining()


@pytest.mark.worker
def test_the_task_deletes_a_backlog_larger_than_one_batch_in_several_deletes(
        transactional_db, celery_worker, workspace, other_workspace):
    events(workspace, timedelta(days=45), 15)
    events(other_workspace, timedelta(days=60), 10)
    kept = events(workspace, timedelta(days=1), 3)

    result = run_task(batch_size=7)

    assert (result["deleted"], result["batches"]) == (25, 4)  # 7 + 7 + 7 + 4
    assert remaining() == set(kept)


@pytest.mark.worker
def test_the_task_with_a_retention_of_0_keeps_everything(transactional_db, celery_worker, workspace):
    ids = events(workspace, timedelta(days=3000), 2) + events(workspace, timedelta(0))

    assert run_task(retention_days=0) == {"deleted": 0, "batches": 0, "before": None}
    assert remaining() == set(ids)


def test_a_setting_of_0_keeps_everything_without_a_query(db, settings, workspace,
                                                          django_assert_num_queries):
    settings.FATHOM_TRACE_RETENTION_DAYS = 0
    ids = events(workspace, timedelta(days=3000))

    with django_assert_num_queries(0):
        assert traces_prune()["deleted"] == 0
    assert remaining() == set(ids)


def test_each_delete_removes_at_most_one_batch(db, settings, workspace):
    settings.FATHOM_TRACE_RETENTION_DAYS = 5
    events(workspace, timedelta(days=10), 12)
    kept = events(workspace, timedelta(days=4))

    with CaptureQueriesContext(connection) as queries:
        result = traces_prune(batch_size=5)

    deletes = [query["sql"] for query in queries if query["sql"].startswith("DELETE")]
    assert len(deletes) == 3 and all("LIMIT 5 " in sql for sql in deletes)
    assert (result["deleted"], result["batches"]) == (12, 3)
    assert remaining() == set(kept)


def test_a_batch_size_below_1_is_refused_rather_than_looping(db):
    with pytest.raises(ValueError, match="batch_size must be at least 1, got 0"):
        traces_prune(retention_days=30, batch_size=0)


def test_retention_keeps_whole_utc_days():
    start = retention_start(days=30)
    assert (start.hour, start.minute, start.second, start.microsecond) == (0, 0, 0, 0)
    assert timedelta(days=30) <= timezone.now() - start < timedelta(days=31)


def test_the_migration_makes_the_prune_an_hourly_maintenance_beat_entry_and_keeps_an_operators_edit(db):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("fathom.migrations.0006_traces_prune_schedule")
    entry = PeriodicTask.objects.get(name=TRACES_PRUNE_TASK)  # made when the test database was migrated
    assert (entry.task, entry.interval.every, entry.interval.period, entry.enabled, entry.queue) == (
        TRACES_PRUNE_TASK, 3600, "seconds", True, "maintenance")

    entry.interval = IntervalSchedule.objects.get_or_create(every=7200, period="seconds")[0]
    entry.save()
    migration.create_traces_prune(apps, None)
    assert PeriodicTask.objects.get(name=TRACES_PRUNE_TASK).interval.every == 7200

    PeriodicTask.objects.filter(name=TRACES_PRUNE_TASK).delete()
    migration.create_traces_prune(apps, None)
    assert PeriodicTask.objects.get(name=TRACES_PRUNE_TASK).interval.every == 3600
