"""Routines: a bad schedule refused at draft, the beat entry an approval creates, and what a tick records."""

import json
import time

import pytest
from django.db import OperationalError
from django_celery_beat.models import PeriodicTask

from fathom.celery import app
from fathom.errors import ApplicationError
from proposals import scheduled_routines
from proposals.models import ProposalStatus, Routine, RoutineRun
from proposals.services import proposal_approve, proposal_draft
from tests.proposals.conftest import routine_payload


def approve_routine(workspace, **overrides) -> Routine:
    proposal = proposal_draft(workspace=workspace, tool="routines", title="Routine", producer="fire:f1",
                              payload=routine_payload(**overrides))
    proposal = proposal_approve(proposal=proposal, decided_by="operator:ops")
    assert proposal.status == ProposalStatus.APPROVED, proposal.failure_reason
    return Routine.objects.get(pk=int(proposal.result_ref.removeprefix("routine:")))


def test_a_bad_schedule_in_a_draft_is_refused_naming_the_payload_field(workspace):
    with pytest.raises(ApplicationError, match=r"payload.schedule: schedule '0 25 \* \* \*': the hour field"):
        proposal_draft(workspace=workspace, tool="routines", title="x", producer="t",
                       payload=routine_payload(schedule="0 25 * * *"))


def test_approval_creates_a_periodic_task_whose_crontab_matches(workspace):
    routine = approve_routine(workspace, schedule="30 7 * * mon-fri", timezone="Europe/Paris")

    task = PeriodicTask.objects.select_related("crontab").get(pk=routine.periodic_task_id)
    assert task.task == "fires.routine_run" and task.queue == "fires" and task.enabled
    assert json.loads(task.kwargs) == {"routine_id": routine.pk}
    cron = task.crontab
    assert (cron.minute, cron.hour, cron.day_of_month, cron.month_of_year, cron.day_of_week) == \
        ("30", "7", "*", "*", "mon-fri")
    assert str(cron.timezone) == "Europe/Paris"
    assert task.expire_seconds and task.name == f"routine:{workspace.slug}:morning-review"
    assert (routine.prompt, routine.route) == ("Review yesterday's deltas.", "feed")


def test_a_routine_name_is_taken_once_per_workspace(workspace, other_workspace):
    approve_routine(workspace)
    approve_routine(other_workspace)  # the same name elsewhere is fine

    with pytest.raises(ApplicationError, match="a routine named 'morning-review' exists already"):
        proposal_draft(workspace=workspace, tool="routines", title="x", producer="t", payload=routine_payload())


def test_a_tick_records_one_run_even_when_delivered_twice(workspace, settings):
    settings.FATHOM_ROUTINE_FIRE_STARTER = ""  # no harness: the run is only recorded
    routine = approve_routine(workspace)

    first = scheduled_routines.routine_run_start(routine_id=routine.pk, task_id="task-1")
    again = scheduled_routines.routine_run_start(routine_id=routine.pk, task_id="task-1")

    assert first.pk == again.pk and RoutineRun.objects.count() == 1
    assert (first.status, first.prompt, first.route) == ("recorded", routine.prompt, "feed")


STARTED = []


def record_start(*, routine, run):
    STARTED.append((routine.workspace_id, run.prompt, run.route))
    return "fire:f42"


def test_the_configured_fire_starter_starts_a_fire_with_the_prompt(workspace, settings):
    settings.FATHOM_ROUTINE_FIRE_STARTER = f"{__name__}.record_start"
    STARTED.clear()
    routine = approve_routine(workspace)

    run = scheduled_routines.routine_run_start(routine_id=routine.pk, task_id="task-2")

    assert STARTED == [(workspace.pk, "Review yesterday's deltas.", "feed")]
    assert (run.status, run.fire_ref) == ("started", "fire:f42")


def start_blips_once(*, routine, run):
    if not STARTED:
        STARTED.append("blip")
        raise OperationalError("the connection was reset")
    return "fire:f43"


def test_a_transient_error_starting_the_fire_rolls_the_tick_back_for_the_tasks_retry(workspace, settings):
    settings.FATHOM_ROUTINE_FIRE_STARTER = f"{__name__}.start_blips_once"
    STARTED.clear()
    routine = approve_routine(workspace)

    with pytest.raises(OperationalError):
        scheduled_routines.routine_run_start(routine_id=routine.pk, task_id="task-3")
    assert not RoutineRun.objects.exists()  # not recorded as failed: the retry starts it
    run = scheduled_routines.routine_run_start(routine_id=routine.pk, task_id="task-3")

    assert (run.status, run.fire_ref, run.error) == ("started", "fire:f43", "")


@pytest.mark.worker
def test_a_beat_tick_run_by_a_worker_fires_the_prompt_in_the_routes_session(transactional_db, celery_worker,
                                                                           workspace):
    from harness.fires.models import Fire
    from harness.runtime.models import Trigger

    routine = approve_routine(workspace)
    task = PeriodicTask.objects.get(pk=routine.periodic_task_id)

    # What beat does on a tick: send the entry's task with its kwargs to its queue.
    app.send_task(task.task, kwargs=json.loads(task.kwargs), queue=task.queue)

    deadline = time.monotonic() + 60
    while not Fire.objects.filter(workspace=workspace, status__in=Fire.TERMINAL).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    run = RoutineRun.objects.get(routine=routine)
    trigger = Trigger.objects.get(pk=run.fire_ref.removeprefix("trigger:"))
    fire = Fire.objects.get(workspace=workspace)
    assert run.task_id and run.status == "started"
    assert (trigger.kind, trigger.content, trigger.session.tag) == ("cron", routine.prompt, "feed")
    assert fire.session_id == trigger.session_id and routine.prompt in fire.question
    assert fire.status == "finished" and fire.stop_reason == "responded"


def test_deleting_a_routine_in_admin_removes_its_beat_entry(admin_client, workspace):
    from django.urls import reverse

    routine = approve_routine(workspace)
    url = reverse("admin:proposals_routine_delete", args=[routine.pk])

    response = admin_client.post(url, {"post": "yes"})

    assert response.status_code == 302
    assert not Routine.objects.exists() and not PeriodicTask.objects.filter(task="fires.routine_run").exists()
