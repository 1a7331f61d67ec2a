"""REST of autonomy: pressure, settings (owner or operator), decisions, the inbox and directives,
each scoped to its workspace."""

import pytest
from django_celery_beat.models import PeriodicTask

from harness.autonomy.models import AutonomyDecision
from harness.autonomy.services import autonomy_settings_get, autonomy_sweep
from harness.runtime.models import Trigger
from lake.services import delta_create


def test_pressure_returns_now_its_breakdown_and_the_series(api, workspace):
    autonomy_sweep()
    autonomy_sweep()
    body = api.get("/v1/autonomy/pressure").json()
    assert body["mode"] == "observe" and 0 <= body["now"]["value"] <= 1
    assert set(body["now"]["breakdown"]) == {s["name"] for s in body["signals"]}
    assert set(body["now"]["breakdown"]["since_sit"]) == {"raw", "scaled", "weight", "contribution"}
    assert len(body["series"]) == 2 and body["series"][0]["at"] <= body["series"][1]["at"]


@pytest.mark.parametrize("role", ["owner", "operator"])
def test_owner_and_operator_read_and_change_the_settings(workspace, api_client_for, role):
    client = api_client_for(workspace, role)
    assert client.get("/v1/autonomy/settings").json()["mode"] == "observe"
    response = client.put("/v1/autonomy/settings", {"mode": "on", "threshold": 0.7, "quiet_start": "22:00",
                                                    "quiet_end": "07:00", "time_zone": "Europe/Paris"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["mode"] == "on" and response.json()["quiet_end"] == "07:00"
    settings = autonomy_settings_get(workspace=workspace)
    assert (settings.mode, settings.threshold, settings.time_zone) == ("on", 0.7, "Europe/Paris")


def test_a_viewer_may_neither_read_nor_change_the_settings(workspace, api_client_for):
    viewer = api_client_for(workspace, "viewer")
    assert viewer.get("/v1/autonomy/settings").status_code == 403
    assert viewer.put("/v1/autonomy/settings", {"mode": "on"}, format="json").status_code == 403
    assert autonomy_settings_get(workspace=workspace).mode == "observe"
    assert viewer.get("/v1/autonomy/pressure").status_code == 200


@pytest.mark.parametrize(("body", "field"), [
    ({"mode": "maybe"}, "mode"), ({"threshold": 2}, "threshold"), ({"time_zone": "Mars/Olympus"}, "time_zone"),
    ({"quiet_start": "22:00"}, "quiet_start"), ({"cron": "every day"}, "cron"), ({"weight_directives": -1}, None),
    ({"window_minutes": 0}, "window_minutes"), ({"threshold": "high"}, "threshold"),
])
def test_bad_settings_are_a_400_naming_the_field(api, workspace, body, field):
    response = api.put("/v1/autonomy/settings", body, format="json")
    assert response.status_code == 400, response.content
    if field:
        assert field in str(response.json()["error"])
    assert autonomy_settings_get(workspace=workspace).mode == "observe"


def test_a_cron_makes_a_beat_entry_and_switching_off_removes_it(api, workspace):
    api.put("/v1/autonomy/settings", {"cron": "0 9 * * *", "time_zone": "Asia/Tokyo"}, format="json")
    entry = PeriodicTask.objects.get(name=f"autonomy:{workspace.slug}")
    assert entry.task == "fires.autonomy_scheduled_sit" and str(entry.crontab.timezone) == "Asia/Tokyo"
    api.put("/v1/autonomy/settings", {"mode": "off"}, format="json")
    assert not PeriodicTask.objects.filter(name=f"autonomy:{workspace.slug}").exists()


def test_decisions_are_listed_newest_first_and_filtered(api, workspace):
    autonomy_sweep()
    api.put("/v1/autonomy/settings", {"threshold": 1.0}, format="json")
    autonomy_sweep()
    results = api.get("/v1/autonomy/decisions").json()["results"]
    assert len(results) == 2 and results[0]["reason"] == "below_threshold"
    assert api.get("/v1/autonomy/decisions?action=skip").json()["results"][0]["reason"] == "below_threshold"
    assert api.get("/v1/autonomy/decisions?action=nope").status_code == 400


def test_the_inbox_lists_directives_and_sit_transcripts_and_marks_them(api, workspace):
    directive = delta_create(workspace=workspace, content="look into the rover logs", tags=["kind:directive"])
    transcript = delta_create(workspace=workspace, content="I sat with it", tags=["kind:card", "mode:self_directing"])
    delta_create(workspace=workspace, content="an ordinary card", tags=["kind:card", "mode:reactive"])
    items = api.get("/v1/autonomy/inbox").json()["results"]
    assert [(i["id"], i["kind"], i["state"]) for i in items] == [
        (transcript.id, "transcript", "new"), (directive.id, "directive", "new")]
    assert api.post(f"/v1/autonomy/inbox/{transcript.id}", {"action": "acknowledge"}, format="json").json()[
        "state"] == "acknowledged"
    assert [i["id"] for i in api.get("/v1/autonomy/inbox?state=new").json()["results"]] == [directive.id]
    assert [i["id"] for i in api.get("/v1/autonomy/directives").json()["results"]] == [directive.id]


def test_acting_on_a_directive_queues_one_fire_on_it(api, workspace):
    directive = delta_create(workspace=workspace, content="look into the rover logs", tags=["kind:directive"])
    first = api.post(f"/v1/autonomy/inbox/{directive.id}", {"action": "act"}, format="json").json()
    again = api.post(f"/v1/autonomy/inbox/{directive.id}", {"action": "act"}, format="json").json()
    assert first["state"] == "acted" and first["trigger"] == again["trigger"]
    trigger = Trigger.objects.get(pk=first["trigger"])
    assert directive.id in trigger.content and trigger.session.tag == "autonomy"
    # acted on, it no longer presses
    body = api.get("/v1/autonomy/pressure").json()
    assert body["now"]["breakdown"]["directives"]["raw"] == 0


def test_marking_what_is_not_an_inbox_item_is_a_404(api, workspace):
    card = delta_create(workspace=workspace, content="a reactive card", tags=["kind:card"])
    assert api.post(f"/v1/autonomy/inbox/{card.id}", {"action": "act"}, format="json").status_code == 404
    assert api.post("/v1/autonomy/inbox/ffffffffffffffff", {"action": "act"}, format="json").status_code == 404
    assert api.post("/v1/autonomy/inbox/not-an-id", {"action": "act"}, format="json").status_code in (400, 404)


def test_a_viewer_may_read_the_inbox_but_not_mark_it(workspace, api_client_for):
    directive = delta_create(workspace=workspace, content="d", tags=["kind:directive"])
    viewer = api_client_for(workspace, "viewer")
    assert viewer.get("/v1/autonomy/inbox").status_code == 200
    assert viewer.post(f"/v1/autonomy/inbox/{directive.id}", {"action": "dismiss"}, format="json").status_code == 403


def test_every_autonomy_endpoint_is_scoped_to_its_workspace(workspace, other_workspace, api_client_for):
    mine, theirs = api_client_for(workspace, "owner"), api_client_for(other_workspace, "owner")
    directive = delta_create(workspace=workspace, content="mine", tags=["kind:directive"])
    mine.put("/v1/autonomy/settings", {"mode": "on", "threshold": 1.0}, format="json")
    autonomy_sweep()
    assert theirs.get("/v1/autonomy/settings").json()["mode"] == "observe"
    assert theirs.get("/v1/autonomy/inbox").json()["results"] == []
    assert theirs.get("/v1/autonomy/directives").json()["results"] == []
    assert all(d["id"] not in AutonomyDecision.objects.filter(workspace=workspace).values_list("id", flat=True)
               for d in theirs.get("/v1/autonomy/decisions").json()["results"])
    assert theirs.post(f"/v1/autonomy/inbox/{directive.id}", {"action": "dismiss"}, format="json").status_code == 404
    assert theirs.get("/v1/autonomy/pressure").json()["now"]["breakdown"]["directives"]["raw"] == 0
    assert mine.get("/v1/autonomy/pressure").json()["now"]["breakdown"]["directives"]["raw"] == 1
