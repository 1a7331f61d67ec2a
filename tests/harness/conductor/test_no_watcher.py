"""Seed 004, section 6: no watcher runtime starts anywhere. `fathom up` starts web, Festinger's proxy, its
workers and beat, nothing else; no task or beat entry is a watcher; a run's actors are the conductor and
its workers.
(The started worker's registered tasks are checked in test_worker.py.)"""

import pytest
from django_celery_beat.models import PeriodicTask

from fathom.celery import app
from fathom.supervisor import stack_children
from harness.conductor.selectors import run_graph
from harness.conductor.services import run_create

pytestmark = pytest.mark.django_db


def test_fathom_up_starts_web_the_workers_and_beat_and_no_watcher():
    assert [child.name for child in stack_children(host="127.0.0.1", port=8000)] == [
        "web", "proxy", "worker", "quality", "beat"]


def test_no_task_and_no_beat_entry_is_a_watcher():
    app.loader.import_default_modules()
    assert "fires.conductor_step" in app.tasks
    assert not [name for name in app.tasks if "watch" in name.lower()]
    assert PeriodicTask.objects.exists()  # the migrations' entries are there to be looked at
    assert not PeriodicTask.objects.filter(task__icontains="watch").exists()
    assert not PeriodicTask.objects.filter(name__icontains="watch").exists()


def test_a_runs_actors_are_the_conductor_and_its_workers_only(workspace, driver):
    run = run_create(workspace=workspace, objective="whats tech news today")
    driver.drain()
    actors = [actor["actor_id"].split(":")[0] for actor in run_graph(run=run)["actors"]]
    assert set(actors) == {"conductor", "fire"}  # the researcher's fire
