"""The resolution job end to end: conflicts queued over REST, "run now" over REST, a real Celery worker
asking the scripted resolver; and beat's entry sending the registered task (seed T37, T38)."""

import json
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from fathom.redis_client import get_redis
from festinger import cache
from festinger.models import Concept, Conflict, Edge, ResolutionRun
from festinger.resolution import LOCK_SECONDS, _WorkspaceLock
from festinger.schedules import RESOLUTION_TASK, resolution_task_name
from festinger.services import config_update, insert_fact, world_ensure
from tests.festinger.conftest import isa_isa_conflict


def wait_for_run(api, run_id, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = api.get(f"/v1/festinger/resolve/runs/{run_id}").json()
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.3)
    raise TimeoutError(f"run {run_id} did not finish: {run}")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_t37_t38_collisions_resolved_by_the_job_on_a_real_worker(celery_worker, workspace, api, scripted_llm):
    world_ensure(workspace=workspace)
    for token in ("gnommoweb", "dobby"):  # both salient: their recollections show
        Concept.objects.update_or_create(workspace=workspace, token=token, defaults={"encounter_count": 20})
    cache.world_reload(workspace.pk)
    # T37: ISA+ISA collision -> queue -> [type?] marker -> job -> decompose into two dimensions
    api.post("/v1/festinger/iknowthat", {"fact": "gnommoweb -isa repo"}, format="json")
    isa = api.post("/v1/festinger/iknowthat", {"fact": "gnommoweb -isa container"}, format="json").json()["conflict"]
    assert "gnommoweb: [type?] repo" in recollection(api, "gnommoweb and dobby")
    # T38: ISPART+ISPART collision -> queue -> job -> dismiss, world unchanged
    insert_fact(workspace=workspace, concept="dobby", parent="agent_pool", dimension="membership",
                is_isa=False, confidence=0.9, source="cloud_llm")
    ispart = insert_fact(workspace=workspace, concept="dobby", parent="worker_pool", dimension="membership",
                         is_isa=False, confidence=0.5, source="inferred")
    scripted_llm.reply(json.dumps({"decision": "decompose", "existing_dimension": "artifact-type",
                                   "new_dimension": "deployment-type", "reasoning": "both"}))  # priority first
    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "stale rumour"}))
    assert "dobby: [membership?] agent_pool" in recollection(api, "gnommoweb and dobby")

    queued = api.post("/v1/festinger/resolve/run", {}, format="json")
    assert queued.status_code == 202
    run = wait_for_run(api, queued.json()["id"])

    assert (run["status"], run["processed"], run["resolved"], run["dismissed"], run["failed"]) == (
        "finished", 2, 1, 1, 0)
    assert sorted(Edge.objects.filter(workspace=workspace, concept__token="gnommoweb")
                  .values_list("parent__token", "dimension__token")) == [
        ("container", "deployment-type"), ("repo", "artifact-type")]
    assert list(Edge.objects.filter(workspace=workspace, concept__token="dobby")
                .values_list("parent__token", flat=True)) == ["agent_pool"]
    statuses = dict(Conflict.objects.filter(workspace=workspace).values_list("pk", "status"))
    assert statuses == {isa["id"]: "resolved", ispart.pk: "dismissed"}
    pending = api.get("/v1/festinger/conflicts?status=pending").json()["results"]
    assert pending == []
    block = recollection(api, "gnommoweb and dobby")  # clean: two dimensions, no marker
    gnommoweb = next(line for line in block.splitlines() if line.startswith("gnommoweb:"))
    assert "?" not in block and "[artifact-type] repo" in gnommoweb and "[deployment-type] container" in gnommoweb
    assert "dobby: [membership] agent_pool" in block
    cache.forget(workspace.pk)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_run_whose_worker_died_is_failed_by_the_next_run(celery_worker, workspace, other_workspace, api,
                                                            admin_client, scripted_llm):
    # Given a run left `running` past the lock's expiry (its worker died: nobody holds the lock),
    # and a pending conflict it never reached
    long_ago = timezone.now() - timedelta(seconds=LOCK_SECONDS + 60)
    lost = ResolutionRun.objects.create(workspace=workspace, trigger="schedule", status="running",
                                        started_at=long_ago)
    elsewhere = ResolutionRun.objects.create(workspace=other_workspace, trigger="schedule", status="running",
                                             started_at=long_ago)
    assert not get_redis().exists(f"festinger:resolution:lock:{workspace.pk}")
    insert_fact(workspace=workspace, concept="dobby", parent="agent_pool", dimension="membership",
                is_isa=False, confidence=0.9, source="cloud_llm")
    conflict = insert_fact(workspace=workspace, concept="dobby", parent="worker_pool", dimension="membership",
                           is_isa=False, confidence=0.5, source="inferred")
    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "stale rumour"}))
    assert api.get(f"/v1/festinger/resolve/runs/{lost.pk}").json()["status"] == "running"

    # When an operator runs resolution now
    queued = api.post("/v1/festinger/resolve/run", {}, format="json")
    run = wait_for_run(api, queued.json()["id"])

    # Then the lost run is failed, the new one drains the queue, and REST and admin say so
    assert (run["status"], run["processed"], run["dismissed"]) == ("finished", 1, 1)
    shown = api.get(f"/v1/festinger/resolve/runs/{lost.pk}").json()
    assert (shown["status"], shown["error"]) == ("failed", "worker lost: run did not finish")
    assert shown["finished_at"] is not None
    assert api.get("/v1/festinger/conflicts?status=pending").json()["results"] == []
    assert api.get(f"/v1/festinger/conflicts/{conflict.pk}").json()["status"] == "dismissed"
    runs_page = admin_client.get(reverse("admin:festinger_resolutionrun_changelist")).content.decode()
    assert "worker lost: run did not finish" in runs_page
    assert ResolutionRun.objects.get(pk=elsewhere.pk).status == "running"  # another workspace's runs are its own


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("delivered", ["an operator's run", "a scheduled tick"])
def test_a_run_whose_worker_died_mid_run_is_carried_on_by_the_redelivered_task(delivered, celery_worker, workspace,
                                                                               api, scripted_llm):
    # Given a run whose worker died mid-run: the run `running`, one conflict decided, the lock still
    # held in the dead attempt's name, one conflict pending
    insert_fact(workspace=workspace, concept="dobby", parent="agent_pool", dimension="membership",
                is_isa=False, confidence=0.9, source="cloud_llm")
    decided = insert_fact(workspace=workspace, concept="dobby", parent="worker_pool", dimension="membership",
                          is_isa=False, confidence=0.5, source="inferred")
    pending = insert_fact(workspace=workspace, concept="dobby", parent="job_pool", dimension="membership",
                          is_isa=False, confidence=0.5, source="inferred")
    Conflict.objects.filter(pk=decided.pk).update(status="dismissed")
    scheduled = delivered == "a scheduled tick"
    run = ResolutionRun.objects.create(workspace=workspace, trigger="schedule" if scheduled else "operator",
                                       task_id="the-delivery-that-died", status="running",
                                       started_at=timezone.now(), processed=1, dismissed=1)
    lock_key = f"festinger:resolution:lock:{workspace.pk}"
    assert _WorkspaceLock(workspace.pk, run.pk).acquire()  # taken by the attempt that died
    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "stale rumour"}))

    # When the broker delivers its task again (what acks_late does once the worker is gone)
    from fathom.celery import app

    if scheduled:
        app.send_task(RESOLUTION_TASK, kwargs={"workspace_id": workspace.pk}, queue="maintenance",
                      task_id=run.task_id)
    else:
        app.send_task(RESOLUTION_TASK, kwargs={"run_id": run.pk}, queue="maintenance", task_id=run.task_id)

    # Then the worker carries the same run on: only the pending conflict is asked about, the counts go
    # on from where the dead attempt left them, and the lock is let go
    shown = wait_for_run(api, run.pk)
    assert (shown["status"], shown["processed"], shown["dismissed"]) == ("finished", 2, 2)
    assert api.get(f"/v1/festinger/conflicts/{pending.pk}").json()["status"] == "dismissed"
    assert len(scripted_llm.sent) == 1 and not get_redis().exists(lock_key)
    assert ResolutionRun.objects.filter(workspace=workspace).count() == 1


def recollection(api, text) -> str:
    response = api.get("/v1/festinger/recollection", {"text": text})
    assert response.status_code == 200, response.content
    return response.json()["block"]


@pytest.mark.django_db
def test_beat_schedules_the_registered_task_on_the_configured_crontab(workspace, scripted_llm):
    from django_celery_beat.schedulers import DatabaseScheduler

    from fathom.celery import app

    app.loader.import_default_modules()  # as a worker does at start: the apps' tasks modules
    config_update(config=world_ensure(workspace=workspace), resolution_schedule="15 4 * * *")
    entries = DatabaseScheduler(app=app, lazy=True).all_as_schedule()
    entry = entries[resolution_task_name(workspace_id=workspace.pk)]
    assert entry.task == RESOLUTION_TASK and RESOLUTION_TASK in app.tasks
    assert (entry.schedule.minute, entry.schedule.hour) == ({15}, {4})

    conflict = isa_isa_conflict(workspace)
    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "noise"}))
    app.tasks[entry.task].apply(args=entry.args, kwargs=entry.kwargs)  # what beat sends, run in process
    assert Conflict.objects.get(pk=conflict.pk).status == "dismissed"
