"""REST for sessions, messages, events and profiles; the real worker and the live SSE stream."""

import json

import httpx
import pytest

from fathom.services import apikey_create
from harness.runtime.models import AgentProfile, Session, SessionEvent, Trigger
from tests.conftest import wait_for
from tests.harness.support import read_sse, wait_for_background_work


def test_it_opens_a_session_with_the_default_agent_profile(api):
    response = api.post("/v1/sessions", {"title": "first"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["tag"].startswith("session:")
    assert body["agent_profile_copy"]["slug"] == "fathom"
    assert api.get(f"/v1/sessions/{body['id']}").json()["title"] == "first"


def test_it_rejects_an_unknown_profile(api):
    response = api.post("/v1/sessions", {"agent": "nobody"}, format="json")
    assert response.status_code == 404
    assert "nobody" in response.json()["error"]["message"]


@pytest.mark.parametrize("tag", ["kind:directive", "from:0123456789abcdef", "provenance-level:1"])
def test_a_session_tag_the_lake_reads_as_what_a_delta_is_is_refused(api, tag):
    response = api.post("/v1/sessions", {"title": "t", "tag": tag}, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["error"]["details"]["field"] == "tag" and tag in response.json()["error"]["message"]
    assert not Session.objects.filter(tag=tag).exists()
    assert api.post("/v1/sessions", {"tag": "project:apollo"}, format="json").status_code == 201


def test_a_message_is_accepted_with_202_and_its_trigger_id(api, session):
    response = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "hello"}, format="json",
                        HTTP_IDEMPOTENCY_KEY="abc")
    assert response.status_code == 202, response.content
    trigger = Trigger.objects.get(pk=response.json()["trigger_id"])
    assert trigger.content == "hello" and trigger.state == Trigger.State.QUEUED
    again = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "hello"}, format="json",
                     HTTP_IDEMPOTENCY_KEY="abc")
    assert again.json()["trigger_id"] == str(trigger.pk)
    listed = api.get(f"/v1/sessions/{session.pk}/messages").json()["results"]
    assert [m["id"] for m in listed] == [str(trigger.pk)]


def test_a_replayed_message_is_marked_and_queues_nothing(api, session):
    first = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "x"}, format="json",
                     HTTP_IDEMPOTENCY_KEY="dup1")
    replay = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "x"}, format="json",
                      HTTP_IDEMPOTENCY_KEY="dup1")
    assert first.status_code == 202 and "Idempotent-Replayed" not in first.headers
    assert replay.status_code == 200 and replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json()["trigger_id"] == first.json()["trigger_id"]
    assert Trigger.objects.filter(session=session).count() == 1


def test_the_same_key_with_a_different_message_is_a_422_and_loses_nothing_silently(api, session):
    api.post(f"/v1/sessions/{session.pk}/messages", {"content": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="dup1")
    changed = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "a totally different question"},
                       format="json", HTTP_IDEMPOTENCY_KEY="dup1")
    assert changed.status_code == 422, changed.content
    error = changed.json()["error"]
    assert error["code"] == "idempotency_key_reused" and error["details"]["idempotency_key"] == "dup1"
    other_options = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "x", "iterations": 3},
                             format="json", HTTP_IDEMPOTENCY_KEY="dup1")
    assert other_options.status_code == 422
    assert list(Trigger.objects.filter(session=session).values_list("content", flat=True)) == ["x"]


def test_a_key_over_255_characters_is_a_400_not_cut_into_a_collision(api, session):
    shared = "k" * 200
    accepted = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "x"}, format="json",
                        HTTP_IDEMPOTENCY_KEY=shared + "a" * 55)
    other = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "y"}, format="json",
                     HTTP_IDEMPOTENCY_KEY=shared + "b" * 55)
    assert accepted.status_code == 202 and other.status_code == 202, other.content
    assert other.json()["trigger_id"] != accepted.json()["trigger_id"]
    too_long = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "z"}, format="json",
                        HTTP_IDEMPOTENCY_KEY="k" * 256)
    assert too_long.status_code == 400, too_long.content
    assert "Idempotency-Key" in too_long.json()["error"]["message"]
    assert Trigger.objects.filter(session=session).count() == 2


def test_another_workspace_neither_replays_nor_collides_with_a_key(api, session, other_workspace, api_client_for):
    mine = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "x"}, format="json",
                    HTTP_IDEMPOTENCY_KEY="dup1").json()
    intruder = api_client_for(other_workspace, "owner")
    assert intruder.post(f"/v1/sessions/{session.pk}/messages", {"content": "x"}, format="json",
                         HTTP_IDEMPOTENCY_KEY="dup1").status_code == 404
    theirs_session = intruder.post("/v1/sessions", {}, format="json").json()
    theirs = intruder.post(f"/v1/sessions/{theirs_session['id']}/messages", {"content": "y"}, format="json",
                           HTTP_IDEMPOTENCY_KEY="dup1")
    assert theirs.status_code == 202 and "Idempotent-Replayed" not in theirs.headers
    assert theirs.json()["trigger_id"] != mine["trigger_id"] and theirs.json()["content"] == "y"
    assert list(Trigger.objects.filter(session=session).values_list("content", flat=True)) == ["x"]


def test_an_empty_message_is_a_400_naming_the_field(api, session):
    response = api.post(f"/v1/sessions/{session.pk}/messages", {"content": ""}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("content")


def test_a_viewer_may_read_but_not_send(api_client_for, workspace, session):
    viewer = api_client_for(workspace, "viewer")
    assert viewer.get(f"/v1/sessions/{session.pk}/events").status_code == 200
    assert viewer.post(f"/v1/sessions/{session.pk}/messages", {"content": "x"}, format="json").status_code == 403


def test_events_poll_as_json_after_a_number(api, session):
    for text in ("a", "b", "c"):
        api.post(f"/v1/sessions/{session.pk}/messages", {"content": text}, format="json")
    page = api.get(f"/v1/sessions/{session.pk}/events?after=1").json()
    assert [e["seq"] for e in page["events"]] == [2, 3]
    assert page["events"][0]["kind"] == "TriggerAccepted" and page["events"][0]["data"]["content"] == "b"
    assert page["last_seq"] == 3
    assert api.get(f"/v1/sessions/{session.pk}/events?after=3").json()["events"] == []


def test_listing_sessions_takes_a_fixed_number_of_queries(api, workspace, django_assert_num_queries):
    for _ in range(3):
        api.post("/v1/sessions", {}, format="json")
    with django_assert_num_queries(2):  # the key, the page: nothing per row
        response = api.get("/v1/sessions")
    assert len(response.json()["results"]) == 3


def test_profiles_are_created_changed_and_reach_a_session_on_refresh(api):
    created = api.post("/v1/profiles/agents", {"slug": "ada", "soul_md": "curious"}, format="json")
    assert created.status_code == 201, created.content
    assert api.post("/v1/profiles/agents", {"slug": "ada"}, format="json").status_code == 409
    api.post("/v1/profiles/users", {"slug": "myra", "user_md": "hi", "preferences": {"tone": "plain"}}, format="json")
    session = api.post("/v1/sessions", {"agent": "ada", "user": "myra"}, format="json").json()
    changed = api.patch("/v1/profiles/agents/ada", {"soul_md": "patient"}, format="json").json()
    assert changed["version"] == 2
    assert api.get(f"/v1/sessions/{session['id']}").json()["agent_profile_copy"]["soul_md"] == "curious"
    refresh = api.post(f"/v1/sessions/{session['id']}/refresh-profile")
    assert refresh.status_code == 202 and refresh.json()["kind"] == "refresh_profile"
    slugs = [p["slug"] for p in api.get("/v1/profiles/agents").json()["results"]]
    assert sorted(slugs) == ["ada", "fathom"]
    assert api.get("/v1/profiles/users/myra").json()["preferences"] == {"tone": "plain"}


def test_reading_the_default_agent_profile_never_stores_it(api, workspace):
    # given a workspace that never used its default agent profile
    # when it is listed and shown
    listed = api.get("/v1/profiles/agents").json()["results"]
    shown = api.get("/v1/profiles/agents/fathom")
    # then both show it with its defaults, and nothing was written by a GET
    assert [p["slug"] for p in listed] == ["fathom"]
    assert shown.status_code == 200 and shown.json()["identity_md"].startswith("You are Fathom")
    assert not AgentProfile.objects.filter(workspace=workspace).exists()
    # and an edit stores it, once
    assert api.patch("/v1/profiles/agents/fathom", {"soul_md": "calm"}, format="json").json()["soul_md"] == "calm"
    assert [p["slug"] for p in api.get("/v1/profiles/agents").json()["results"]] == ["fathom"]
    assert AgentProfile.objects.filter(workspace=workspace).count() == 1


# --- with a real worker and a live server -----------------------------------------------------------------

@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_runs_the_turn_for_a_sent_message(celery_worker, api, session):
    response = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "hello worker"}, format="json")
    trigger_id = response.json()["trigger_id"]
    wait_for(lambda: SessionEvent.objects.filter(session=session, kind="TurnEnded").exists())
    kinds = list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True))
    assert kinds[:2] == ["TriggerAccepted", "TurnStarted"] and kinds[-1] == "TurnEnded"
    output = SessionEvent.objects.get(session=session, kind="AssistantOutput")
    assert output.data["body"].startswith("[offline]")  # no model configured: the offline model answered
    trigger = Trigger.objects.get(pk=trigger_id)
    assert trigger.state == Trigger.State.CONSUMED and trigger.addressed
    assert not Session.objects.get(pk=session.pk).runner
    wait_for_background_work(session)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_event_stream_is_served_as_sse_and_resumes_after_last_event_id(
        celery_worker, live_server_url, workspace, session):
    key = apikey_create(workspace=workspace, role="operator").secret
    headers = {"Authorization": f"Bearer {key}"}
    url = f"{live_server_url}/v1/sessions/{session.pk}/events?timeout=15"
    with httpx.Client(timeout=20, headers=headers) as client:
        # given a client following the stream before anything happened
        with client.stream("GET", url, headers={"Accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            # when a message is sent and a worker answers it
            sent = client.post(f"{live_server_url}/v1/sessions/{session.pk}/messages", json={"content": "hi"})
            assert sent.status_code == 202
            # then the events arrive in order, numbered, as they happen
            events = read_sse(stream, until="TurnEnded")
        kinds = [e["event"] for e in events]
        assert kinds[:2] == ["TriggerAccepted", "TurnStarted"] and "AssistantOutput" in kinds
        assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
        assert json.loads(events[0]["data"])["data"]["trigger_id"] == sent.json()["trigger_id"]

        # and a reconnect with Last-Event-ID gets only what followed
        last = events[-1]["id"]
        client.post(f"{live_server_url}/v1/sessions/{session.pk}/messages", json={"content": "again"})
        with client.stream("GET", url, headers={"Accept": "text/event-stream", "Last-Event-ID": last}) as stream:
            resumed = read_sse(stream, 1)
        assert int(resumed[0]["id"]) == int(last) + 1 and resumed[0]["event"] == "TriggerAccepted"
        wait_for(lambda: session.fires.filter(status="finished").count() == 2)
        wait_for_background_work(session)

        # and another workspace's key cannot follow it
        other = client.get(url, headers={"Accept": "text/event-stream", "Authorization": "Bearer nope"})
        assert other.status_code == 401
