"""The live feed over SSE, read with httpx from uvicorn (as `fathom up` serves it): a new fire is sent
as `fire-new`, a fire that moves on as `fire-<id>` (its card again, the accordion one turn fuller),
and a new proposal as `proposal-new`, each rendered by the page's own templates."""

from urllib.parse import quote

import httpx
import pytest
from django.test import Client
from django.utils import timezone

from harness.dashboard.stream import fire_signature
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.fires.services import fire_create
from tests.harness.dashboard.support import member, provenance_proposal

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def next_event(lines) -> dict:
    """The next event of the stream, its data lines joined (a card is many lines of HTML)."""
    event, data, event_id = "", [], ""
    for line in lines:
        if line == "" and data:
            return {"event": event, "data": "\n".join(data), "id": event_id}
        if line.startswith("id:"):
            event_id = line.removeprefix("id:").strip()
        elif line.startswith("event:"):
            event = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data.append(line.removeprefix("data:").removeprefix(" "))
    raise AssertionError("the stream ended")


def logged_in_cookies(workspace) -> dict:
    client = Client()
    client.force_login(member(workspace))
    return {"sessionid": client.cookies["sessionid"].value}


def test_the_stream_sends_new_fires_their_progress_and_new_proposals(live_server_url, workspace, other_workspace):
    cookies = logged_in_cookies(workspace)
    shown = fire_create(workspace=workspace, mode="reactive", question="already on the page")
    # the page it was rendered on: the fire it showed, at the state it showed, and when
    signature = fire_signature(status="accepted", phase="main", model_calls=0, turns=0)
    until = quote(timezone.now().isoformat())
    url = f"{live_server_url}/feed/stream?shown={shown.pk}~{signature}&until={until}&proposals_after=0"
    with httpx.Client(timeout=30, cookies=cookies) as client, client.stream("GET", url) as stream:
        assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        # a fire of another workspace is never sent; one of this workspace is
        fire_create(workspace=other_workspace, mode="reactive", question="not yours")
        new = fire_create(workspace=workspace, mode="reactive", question="a new question")
        event = next_event(lines)
        assert event["event"] == "fire-new" and f'id="fire-{new.pk}"' in event["data"]
        assert "a new question" in event["data"] and "not yours" not in event["data"]

        # the shown fire records a turn with a tool call: its card is sent again, fuller
        turn = FireTurn.objects.create(workspace=workspace, fire=shown, number=1, text="let me look")
        FireToolCall.objects.create(workspace=workspace, fire=shown, turn=turn, call_id="c1", name="semantic",
                                    arguments={"query": "rover"}, result="three moments")
        Fire.objects.filter(pk=shown.pk).update(status="running", model_calls=1)
        event = next_event(lines)
        assert event["event"] == f"fire-{shown.pk}"
        assert '<span class="tool">semantic</span>' in event["data"] and "three moments" in event["data"]

        proposal = provenance_proposal(workspace, level=3)
        event = next_event(lines)
        assert event["event"] == "proposal-new" and f'id="proposal-{proposal.pk}"' in event["data"]
        assert 'name="csrfmiddlewaretoken"' in event["data"]  # its forms post like the page's
        last_id = event["id"]

    # a reconnect with the last event's id inserts nothing twice: the fires it holds come as updates,
    # and only what is newer comes as new
    headers = {"Last-Event-ID": last_id}
    with httpx.Client(timeout=30, cookies=cookies) as client, client.stream("GET", url, headers=headers) as stream:
        lines = stream.iter_lines()
        newer = fire_create(workspace=workspace, mode="reactive", question="a newer question")
        events = [next_event(lines)]
        while events[-1]["event"] != "fire-new":
            events.append(next_event(lines))
        assert f'id="fire-{newer.pk}"' in events[-1]["data"]
        assert {e["event"] for e in events[:-1]} <= {f"fire-{shown.pk}", f"fire-{new.pk}"}


def test_the_stream_needs_a_login(live_server_url, workspace):
    response = httpx.get(f"{live_server_url}/feed/stream", follow_redirects=False, timeout=10)
    assert response.status_code == 302 and response.headers["location"].startswith("/login/")
