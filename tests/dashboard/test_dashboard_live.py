"""The live feed over SSE, read with httpx from uvicorn (as `fathom up` serves it): a new fire is sent
as `fire-new`, a fire that moves on as `fire-<id>` (its card again, the accordion one turn fuller),
and a new proposal as `proposal-new`, each rendered by the page's own templates."""

import html
import re
from datetime import timedelta
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from dashboard import views
from dashboard.stream import fire_signature
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.fires.services import fire_create
from tests.dashboard.support import member, provenance_proposal

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


def first_read(lines) -> list[str]:
    """The event names the stream sent on its first look, before its first keep-alive."""
    names = []
    for line in lines:
        if line.startswith(": keep-alive"):
            return names
        if line.startswith("event:"):
            names.append(line.removeprefix("event:").strip())
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
        with transaction.atomic():  # one change, seen at once (else its card may be sent for each write)
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


def page_stream_url(client: httpx.Client, live_server_url: str) -> tuple[str, object]:
    """The feed page's own stream URL (its sse-connect), and the time the page says it was read at."""
    page = client.get(f"{live_server_url}/")
    url = html.unescape(re.search(r'sse-connect="([^"]+)"', page.text).group(1))
    return f"{live_server_url}{url}", parse_datetime(parse_qs(urlsplit(url).query)["until"][0])


def test_a_fire_the_page_could_not_show_yet_arrives_as_new(live_server_url, workspace):
    # A question asked on the dashboard: its fire is created by a worker while the feed page is being
    # read, too late for the page, stamped before the page's time. The stream sends it all the same.
    cookies = logged_in_cookies(workspace)
    with httpx.Client(timeout=30, cookies=cookies) as client:
        url, read_at = page_stream_url(client, live_server_url)
        late = fire_create(workspace=workspace, mode="reactive", question="asked just now")
        Fire.objects.filter(pk=late.pk).update(created_at=read_at - timedelta(milliseconds=300))
        with client.stream("GET", url) as stream:
            sent = first_read(stream.iter_lines())
    assert sent == ["fire-new"]


def test_a_fire_the_page_showed_is_not_new_to_a_reconnect(live_server_url, workspace):
    # The fire came while the page was read (created after the page's time) and is on the page: a
    # reconnect after its first event must send it as an update, never a second card.
    cookies = logged_in_cookies(workspace)
    shown = fire_create(workspace=workspace, mode="reactive", question="on the page")
    with httpx.Client(timeout=30, cookies=cookies) as client:
        url, read_at = page_stream_url(client, live_server_url)
        assert f"shown={shown.pk}~" in url
        Fire.objects.filter(pk=shown.pk).update(created_at=read_at + timedelta(milliseconds=300))
        with client.stream("GET", url) as stream:
            lines = stream.iter_lines()
            Fire.objects.filter(pk=shown.pk).update(status="running", model_calls=1)
            event = next_event(lines)
        assert event["event"] == f"fire-{shown.pk}"
        with client.stream("GET", url, headers={"Last-Event-ID": event["id"]}) as stream:
            event = next_event(stream.iter_lines())
    assert event["event"] == f"fire-{shown.pk}"


def page_rendered_with(monkeypatch, workspace, *, before_read=None, after_read=None) -> tuple[str, dict]:
    """The feed page's stream URL (path and query) when a worker drafts something just before or just
    after the page reads its entries (the test client renders it in this process), and its cookies."""
    real = views.feed_page

    def feed_page(**kwargs):
        if before_read:
            before_read()
        page = real(**kwargs)
        if after_read:
            after_read()
        return page

    monkeypatch.setattr(views, "feed_page", feed_page)
    client = Client()
    client.force_login(member(workspace))
    page = client.get("/").content.decode()
    return html.unescape(re.search(r'sse-connect="([^"]+)"', page).group(1)), {
        "sessionid": client.cookies["sessionid"].value}


def test_a_proposal_drafted_while_the_page_is_read_arrives_live(live_server_url, workspace, monkeypatch):
    url, cookies = page_rendered_with(monkeypatch, workspace, after_read=lambda: provenance_proposal(workspace, level=3))
    with httpx.Client(timeout=30, cookies=cookies) as client:
        with client.stream("GET", f"{live_server_url}{url}") as stream:
            sent = first_read(stream.iter_lines())
    assert sent == ["proposal-new"]


def test_a_proposal_the_page_showed_is_never_sent_again(live_server_url, workspace, monkeypatch):
    # Drafted once the page's stream position was taken, but before its entries were read: on the page.
    url, cookies = page_rendered_with(monkeypatch, workspace, before_read=lambda: provenance_proposal(workspace, level=3))
    with httpx.Client(timeout=30, cookies=cookies) as client:
        with client.stream("GET", f"{live_server_url}{url}") as stream:
            lines = stream.iter_lines()
            assert first_read(lines) == []
            fire = fire_create(workspace=workspace, mode="reactive", question="later")
            event = next_event(lines)
        assert event["event"] == "fire-new" and f'id="fire-{fire.pk}"' in event["data"]
        with client.stream("GET", f"{live_server_url}{url}", headers={"Last-Event-ID": event["id"]}) as stream:
            sent = first_read(stream.iter_lines())
    assert "proposal-new" not in sent


def test_the_stream_needs_a_login(live_server_url, workspace):
    response = httpx.get(f"{live_server_url}/feed/stream", follow_redirects=False, timeout=10)
    assert response.status_code == 302 and response.headers["location"].startswith("/login/")
