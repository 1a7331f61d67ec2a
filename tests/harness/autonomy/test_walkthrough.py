"""docs/autonomy.md's walk-through, followed as written after README's first steps (a question was
asked): the sweeps before the idle gate opens skip saying why, in words, over REST; the topical
producer leaves the material to the waiting Sit; the sweep after the gate opens claims a Sit, whose
start makes its first message."""

from datetime import timedelta

from django.core.management import call_command
from django.utils import timezone

from harness.autonomy import tasks
from harness.autonomy.models import AutonomyDecision, ProducerRun
from harness.autonomy.services import autonomy_sweep
from harness.runtime.models import Trigger


def test_the_walk_through_sits_once_the_idle_gate_opens_and_says_why_before(api, workspace):
    # given README's first steps: a question asked in a session
    session = api.post("/v1/sessions", {"title": "first"}, format="json").json()["id"]
    assert api.post(f"/v1/sessions/{session}/messages", {"content": "rover dune"}, format="json").status_code == 202
    asked = Trigger.objects.get(workspace=workspace, session_id=session).created_at

    # when the walk-through switches autonomy on with its idle gate and writes 36 moments
    call_command("fathom", "autonomy", "set", "--workspace", workspace.slug, "on", "--idle-minutes", "2")
    notes = [{"content": f"field note {i} on the tide pools"} for i in range(36)]
    assert api.post("/v1/deltas", notes, format="json").status_code == 201

    # then the sweeps inside the idle gate skip, and say why and when it opens
    autonomy_sweep(now=asked + timedelta(seconds=40))
    autonomy_sweep(now=asked + timedelta(seconds=100))
    skips = api.get("/v1/autonomy/decisions").json()["results"]
    assert [(d["action"], d["reason"]) for d in skips] == [("skip", "not_idle")] * 2
    assert skips[0]["words"].startswith("idle gate: last question 1 min ago")
    assert "it opens in under a minute (2 min after a question)" in skips[0]["words"] and skips[0]["opens_at"]
    status = api.get("/v1/autonomy/status").json()
    assert status["now"]["reason"] == "not_idle" and "it opens in" in status["now"]["words"]
    assert status["now"]["pressure"] >= status["threshold"]
    # the producer waits with the Sit: nothing drained the pressure that decides it
    assert not ProducerRun.objects.filter(workspace=workspace).exists()

    # when the gate opens, the next sweep claims the Sit, and the producer is queued beside it
    autonomy_sweep(now=asked + timedelta(minutes=2, seconds=20))
    sit = AutonomyDecision.objects.get(workspace=workspace, action="sit")
    assert sit.reason == "pressure" and "top signal: un-provenanced material" in sit.detail
    assert ProducerRun.objects.filter(workspace=workspace, origin="pressure").count() == 1
    assert "a topical producer run was queued" in sit.detail

    # and its start (the task the sweep queued) makes the Sit's first message
    tasks.autonomy_sit_start.apply(args=[sit.pk], throw=True)
    sit.refresh_from_db()
    assert sit.sit_state == "started" and sit.trigger.source == "sit" and sit.trigger.session.tag == "autonomy"
    words = [d["words"] for d in api.get("/v1/autonomy/status").json()["decisions"]["results"]]
    assert words[0].startswith("sat: pressure") and words[1].startswith("idle gate:")


def test_the_status_says_what_would_happen_now_for_each_gate(api, workspace, autonomy):
    autonomy(mode="on", threshold=1.0)
    body = api.get("/v1/autonomy/status").json()
    assert body["now"]["reason"] == "below_threshold" and body["now"]["words"].startswith("below the threshold: ")
    autonomy(mode="off")
    body = api.get("/v1/autonomy/status").json()
    assert (body["now"]["reason"], body["now"]["pressure"]) == ("off", None)


def test_the_status_explains_a_taken_window_with_when_the_next_opens(api, workspace, autonomy):
    autonomy(mode="on", threshold=0.0, window_minutes=60)
    autonomy_sweep()
    body = api.get("/v1/autonomy/status").json()
    assert body["now"]["reason"] == "window_taken" and "the next window opens in" in body["now"]["words"]
    assert body["decisions"]["results"][0]["action"] == "sit"


def test_the_status_pages_its_decisions_as_the_lists_do(api, workspace):
    # given twelve sweeps' decisions
    for _ in range(12):
        AutonomyDecision.objects.create(workspace=workspace, mode="observe", action=AutonomyDecision.Action.SKIP,
                                        reason="below_threshold", window_start=timezone.now())
    newest_first = list(AutonomyDecision.objects.filter(workspace=workspace).order_by("-created_at", "-id")
                        .values_list("id", flat=True))
    # when the status is read, then page by page, five decisions a page
    first = api.get("/v1/autonomy/status").json()["decisions"]
    page = api.get("/v1/autonomy/status?page_size=5").json()["decisions"]
    pages = [page]
    while page["next"]:
        page = api.get(page["next"]).json()["decisions"]
        pages.append(page)
    # then a page has the lists' shape, ten by default, and the pages hold every decision once, newest first
    assert set(first) == {"next", "previous", "results"} and first["previous"] is None
    assert [d["id"] for d in first["results"]] == newest_first[:10] and first["next"]
    assert [len(p["results"]) for p in pages] == [5, 5, 2]
    assert [d["id"] for p in pages for d in p["results"]] == newest_first
    # and a page size above the maximum is cut to it
    assert len(api.get("/v1/autonomy/status?page_size=1000").json()["decisions"]["results"]) == 12


def test_bad_status_pages_are_a_400_in_the_error_envelope(api):
    for query in ("page_size=abc", "page_size=0", "page_size=2.5", "cursor=not-a-cursor"):
        response = api.get(f"/v1/autonomy/status?{query}")
        assert response.status_code == 400, (query, response.content)
        error = response.json()["error"]
        assert set(error) == {"code", "message", "details"} and query.split("=")[0] in error["details"]


def test_the_status_shows_only_its_own_workspaces_decisions_and_runs(workspace, other_workspace, api_client_for):
    mine, theirs = api_client_for(workspace, "owner"), api_client_for(other_workspace, "owner")
    mine.put("/v1/autonomy/settings", {"mode": "on", "threshold": 1.0}, format="json")
    mine.post("/v1/producers/topical/run", {}, format="json")
    autonomy_sweep()
    ours = mine.get("/v1/autonomy/status").json()
    assert ours["decisions"]["results"] and ours["producer_runs"] and ours["mode"] == "on"
    body = theirs.get("/v1/autonomy/status").json()
    mine_ids = {d["id"] for d in ours["decisions"]["results"]}
    assert body["mode"] == "observe" and body["producer_runs"] == []
    assert not mine_ids & {d["id"] for d in body["decisions"]["results"]}
