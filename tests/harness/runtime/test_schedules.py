"""A session's heartbeat and cron schedules: REST, validation, isolation, their beat entries, and
heartbeat and cron ticks sent by a real beat to a real worker, consumed by the session's turns."""

import json
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from harness.runtime.models import Session, SessionSchedule, Trigger
from harness.runtime.schedules import session_delete, session_schedule_tick
from harness.runtime.services import session_create
from tests.conftest import REPO_ROOT, stop_worker, wait_for, worker_env
from tests.harness.support import wait_for_background_work


@pytest.fixture
def api(api_client_for, workspace):
    return api_client_for(workspace, "operator")


def test_a_heartbeat_and_a_cron_are_created_listed_and_deleted_with_their_beat_entries(api, session):
    beat = api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "heartbeat", "every_seconds": 300}, format="json")
    cron = api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "cron", "cron": "*/5 * * * *",
                                                             "timezone": "Europe/Paris", "content": "tidy up"},
                    format="json")
    assert beat.status_code == 201, beat.content
    assert cron.status_code == 201, cron.content
    heartbeat, crontab = SessionSchedule.objects.get(pk=beat.json()["id"]), SessionSchedule.objects.get(
        pk=cron.json()["id"])

    entry = heartbeat.periodic_task
    assert (entry.task, entry.queue, entry.interval.every, entry.interval.period) == (
        "fires.session_schedule_tick", "fires", 300, "seconds")
    assert json.loads(entry.kwargs) == {"schedule_id": str(heartbeat.pk)} and entry.enabled
    assert str(crontab.periodic_task.crontab.timezone) == "Europe/Paris"
    assert (crontab.periodic_task.crontab.minute, crontab.periodic_task.crontab.hour) == ("*/5", "*")
    listed = api.get(f"/v1/sessions/{session.pk}/schedules").json()["results"]
    assert [(s["kind"], s["every_seconds"], s["cron"], s["enabled"]) for s in listed] == [
        ("cron", None, "*/5 * * * *", True), ("heartbeat", 300, "", True)]  # newest first, as every list
    assert api.get(f"/v1/schedules/{heartbeat.pk}").json()["session"] == str(session.pk)

    assert api.delete(f"/v1/schedules/{heartbeat.pk}").status_code == 204
    assert not PeriodicTask.objects.filter(pk=entry.pk).exists()
    assert api.get(f"/v1/schedules/{heartbeat.pk}").status_code == 404
    assert [s["kind"] for s in api.get(f"/v1/sessions/{session.pk}/schedules").json()["results"]] == ["cron"]


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"kind": "cron", "cron": "*/5 * * *"}, None, "must have 5 fields"),
    ({"kind": "cron", "cron": "61 * * * *"}, None, "the minute field '61' is not valid"),
    ({"kind": "cron", "cron": "* * * * mon-funday"}, None, "day-of-week"),
    ({"kind": "cron"}, None, "needs cron"),
    ({"kind": "cron", "cron": "* * * * *", "timezone": "Mars/Olympus"}, None, "Mars/Olympus"),
    ({"kind": "heartbeat", "every_seconds": 0}, "every_seconds", ""),
    ({"kind": "heartbeat", "every_seconds": 59}, "every_seconds", "greater than or equal to 60"),
    ({"kind": "heartbeat", "every_seconds": -5}, "every_seconds", ""),
    ({"kind": "heartbeat", "every_seconds": "soon"}, "every_seconds", ""),
    ({"kind": "heartbeat"}, None, "every_seconds must be"),
    ({"kind": "heartbeat", "every_seconds": 60, "cron": "* * * * *"}, None, "not cron"),
    ({"kind": "cron", "cron": "* * * * *", "every_seconds": 60}, None, "not every_seconds"),
    ({"kind": "sometimes"}, "kind", ""),
    ({}, "kind", ""),
])
def test_bad_schedules_are_a_400_naming_the_problem(api, session, body, field, words):
    response = api.post(f"/v1/sessions/{session.pk}/schedules", body, format="json")

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    if field:
        assert field in error["details"]
    assert words in error["message"]
    assert not SessionSchedule.objects.exists() and not PeriodicTask.objects.filter(
        task="fires.session_schedule_tick").exists()


def test_a_second_heartbeat_is_a_409_and_a_closed_session_takes_none(api, session, workspace):
    api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "heartbeat", "every_seconds": 60}, format="json")
    again = api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "heartbeat", "every_seconds": 90}, format="json")
    assert again.status_code == 409 and "heartbeat already" in again.json()["error"]["message"]
    closed = session_create(workspace=workspace)
    Session.objects.filter(pk=closed.pk).update(status=Session.Status.CLOSED)
    refused = api.post(f"/v1/sessions/{closed.pk}/schedules", {"kind": "heartbeat", "every_seconds": 60}, format="json")
    assert refused.status_code == 409
    assert SessionSchedule.objects.count() == 1 and PeriodicTask.objects.filter(
        task="fires.session_schedule_tick").count() == 1


def test_schedules_are_invisible_across_workspaces(api, session, api_client_for, other_workspace):
    mine = api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "heartbeat", "every_seconds": 60},
                    format="json").json()["id"]
    other = api_client_for(other_workspace, "owner")

    assert other.get(f"/v1/sessions/{session.pk}/schedules").status_code == 404
    assert other.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "cron", "cron": "* * * * *"},
                      format="json").status_code == 404
    assert other.get(f"/v1/schedules/{mine}").status_code == 404
    assert other.delete(f"/v1/schedules/{mine}").status_code == 404
    assert SessionSchedule.objects.filter(pk=mine).exists()


def test_a_viewer_may_list_schedules_but_not_make_or_delete_them(api, api_client_for, workspace, session):
    mine = api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "heartbeat", "every_seconds": 60},
                    format="json").json()["id"]
    viewer = api_client_for(workspace, "viewer")
    assert viewer.get(f"/v1/sessions/{session.pk}/schedules").status_code == 200
    assert viewer.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "heartbeat", "every_seconds": 60},
                       format="json").status_code == 403
    assert viewer.delete(f"/v1/schedules/{mine}").status_code == 403


def test_deleting_a_session_deletes_its_schedules_and_their_beat_entries(api, session):
    for body in ({"kind": "heartbeat", "every_seconds": 60}, {"kind": "cron", "cron": "@hourly"}):
        api.post(f"/v1/sessions/{session.pk}/schedules", body, format="json")
    entries = list(SessionSchedule.objects.values_list("periodic_task_id", flat=True))

    session_delete(session=session)

    assert not SessionSchedule.objects.exists() and not PeriodicTask.objects.filter(pk__in=entries).exists()


def test_a_tick_of_a_schedule_that_is_gone_removes_its_orphan_beat_entry(api, session):
    schedule_id = api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "heartbeat", "every_seconds": 60},
                           format="json").json()["id"]
    Session.objects.filter(pk=session.pk).delete()  # not through the service: the beat entry is left behind
    assert PeriodicTask.objects.filter(name=f"session-schedule:{schedule_id}").exists()

    assert session_schedule_tick(schedule_id=schedule_id, task_id="t1") is None
    assert not PeriodicTask.objects.filter(name=f"session-schedule:{schedule_id}").exists()


def test_a_tick_queues_its_trigger_once_per_message_and_heartbeats_coalesce(api, session):
    heartbeat = api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "heartbeat", "every_seconds": 60},
                         format="json").json()["id"]
    cron = api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "cron", "cron": "@daily", "content": "report"},
                    format="json").json()["id"]

    first = session_schedule_tick(schedule_id=heartbeat, task_id="a")
    assert session_schedule_tick(schedule_id=heartbeat, task_id="b") is None  # the first is still queued
    ticks = [session_schedule_tick(schedule_id=cron, task_id=t) for t in ("c", "c", "d")]

    assert first.kind == Trigger.Kind.HEARTBEAT and first.source == "beat"
    assert first.payload["schedule_id"] == heartbeat
    assert ticks[0].pk == ticks[1].pk != ticks[2].pk  # a redelivered message queues nothing twice
    assert ticks[0].kind == Trigger.Kind.CRON and ticks[0].content == "report"
    assert Trigger.objects.filter(session=session).count() == 3


def test_the_admin_lists_schedules_and_deletes_them_with_their_beat_entry(admin_client, api, session):
    schedule = api.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "cron", "cron": "*/5 * * * *"},
                        format="json").json()["id"]
    page = admin_client.get("/admin/runtime/sessionschedule/")
    assert page.status_code == 200 and schedule in page.content.decode()
    entry = SessionSchedule.objects.get(pk=schedule).periodic_task_id

    admin_client.post(f"/admin/runtime/sessionschedule/{schedule}/delete/", {"post": "yes"})

    assert not SessionSchedule.objects.filter(pk=schedule).exists()
    assert not PeriodicTask.objects.filter(pk=entry).exists()


def test_the_admin_adds_a_schedule_through_the_service_and_names_a_bad_cron(admin_client, session):
    bad = admin_client.post("/admin/runtime/sessionschedule/add/", {
        "session": session.pk, "kind": "cron", "cron": "*/5 * *", "timezone": "UTC", "content": ""})
    assert bad.status_code == 200 and "must have 5 fields" in bad.content.decode()
    assert not SessionSchedule.objects.exists()
    too_often = admin_client.post("/admin/runtime/sessionschedule/add/", {
        "session": session.pk, "kind": "heartbeat", "every_seconds": 1, "cron": "", "timezone": "UTC", "content": ""})
    assert too_often.status_code == 200 and "every_seconds must be a whole number from 60" in too_often.content.decode()
    assert not SessionSchedule.objects.exists()

    added = admin_client.post("/admin/runtime/sessionschedule/add/", {
        "session": session.pk, "kind": "heartbeat", "every_seconds": 90, "cron": "", "timezone": "UTC",
        "content": "check in"})

    assert added.status_code == 302, added.content.decode()[:2000]
    schedule = SessionSchedule.objects.get()
    assert (schedule.workspace_id, schedule.every_seconds, schedule.content) == (session.workspace_id, 90, "check in")
    assert schedule.periodic_task.interval.every == 90 and schedule.periodic_task.task == "fires.session_schedule_tick"
    again = admin_client.post("/admin/runtime/sessionschedule/add/", {
        "session": session.pk, "kind": "heartbeat", "every_seconds": 60, "cron": "", "timezone": "UTC", "content": ""})
    assert again.status_code == 200 and "heartbeat already" in again.content.decode()
    assert admin_client.get(f"/admin/runtime/sessionschedule/{schedule.pk}/change/").status_code == 200


# --- through beat, on a real worker ------------------------------------------------------------------------

@pytest.fixture
def beat(tmp_path):
    """celery beat with the database scheduler, checking its entries every second (not every 5 s)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "fathom", "beat", "--loglevel", "WARNING", "--pidfile=",
         "-s", str(tmp_path / "celerybeat-schedule"), "--max-interval", "1"],
        cwd=REPO_ROOT, env=worker_env(), stdin=subprocess.DEVNULL, start_new_session=True)
    yield process
    stop_worker(process)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_heartbeat_and_cron_ticks_come_through_beat_and_are_consumed_by_turns(celery_worker, beat, workspace,
                                                                               api_client_for):
    # given a session with a one-minute heartbeat and an every-minute cron schedule (their last runs
    # put two minutes back, so beat finds them due at once rather than a minute later)
    session = session_create(workspace=workspace, title="scheduled")
    client = api_client_for(workspace)
    heartbeat = client.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "heartbeat", "every_seconds": 60},
                            format="json").json()
    cron = client.post(f"/v1/sessions/{session.pk}/schedules", {"kind": "cron", "cron": "* * * * *",
                                                                "content": "the minute report"}, format="json").json()
    PeriodicTask.objects.filter(name__in=[f"session-schedule:{cron['id']}", f"session-schedule:{heartbeat['id']}"]).update(
        last_run_at=timezone.now() - timedelta(minutes=2))

    # when beat runs: then both kinds of trigger are queued by its ticks and consumed by turns
    def consumed(kind):
        return Trigger.objects.filter(session=session, kind=kind, state=Trigger.State.CONSUMED, source="beat").exists()

    wait_for(lambda: consumed(Trigger.Kind.HEARTBEAT) and consumed(Trigger.Kind.CRON), timeout=90, every=0.5)
    fired = Trigger.objects.filter(session=session, kind=Trigger.Kind.CRON).first()
    assert fired.content == "the minute report" and fired.payload["schedule_id"] == cron["id"]
    assert session.fires.filter(question__contains="the minute report").exists()
    assert Trigger.objects.filter(session=session, kind=Trigger.Kind.HEARTBEAT).first().payload[
        "schedule_id"] == heartbeat["id"]

    wait_for(lambda: not session.turns.filter(status="running").exists(), timeout=60)
    for schedule in (heartbeat, cron):
        client.delete(f"/v1/schedules/{schedule['id']}")
    wait_for(lambda: not Trigger.objects.filter(session=session, state__in=["queued", "snapshotted"]).exists(),
             timeout=60)
    wait_for_background_work(session, timeout=90)
