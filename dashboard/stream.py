"""The live feed: Server-Sent Events for one workspace's dashboard, served by the ASGI server.

It wakes on the session event stream's Redis notifications (every fire of a session emits its turns
and tool calls there) and also every few seconds (fires outside a session, a lost notification),
compares the newest fires' progress with what it saw last, and sends the card of each fire that is
new (`fire-new`) or moved on (`fire-<id>`), rendered by the same template as the page, for htmx's SSE
extension to swap in. New proposals arrive as `proposal-new`. It ends after `max_seconds`; the
browser reconnects with the last event's id, a `Cursor` (the newest fire it was sent and the newest
proposal), so nothing is inserted twice; a page without JavaScript is simply reloaded."""

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

import redis.asyncio as aioredis
from django.conf import settings
from django.utils.dateparse import parse_datetime

from fathom.threads import in_thread
from harness.runtime.events import channel_for

POLL_SECONDS = 3.0
WATCHED_FIRES = 40
KEEPALIVE = ": keep-alive\n\n"
# A fire's created_at is taken just before its row commits: one stamped this little before the page
# was read may not have been visible to it yet.
COMMIT_MARGIN = timedelta(seconds=2)


@dataclass
class Cursor:
    """What the browser holds: every fire created up to `fires_until`, every proposal up to `proposal_id`."""

    fires_until: datetime | None
    proposal_id: int

    def __str__(self):
        return f"{self.fires_until.isoformat() if self.fires_until else ''}|{self.proposal_id}"

    @classmethod
    def parse(cls, raw: str) -> "Cursor | None":
        """The cursor of a Last-Event-ID, or None when it is not one of ours."""
        at, _, proposal = (raw or "").partition("|")
        try:
            return cls(fires_until=parse_datetime(at) if at else None, proposal_id=int(proposal))
        except ValueError:
            return None


def sse_event(name: str, html: str, cursor: Cursor) -> str:
    data = "\n".join(f"data: {line}" for line in html.splitlines() or [""])
    return f"id: {cursor}\nevent: {name}\n{data}\n\n"


async def feed_stream(*, progress, render_fire, render_proposal, known: dict, shown_proposals: set[int],
                      cursor: Cursor, max_seconds: float):
    """`progress(proposal_id)` -> ({fire id: (created at, signature)}, [proposal ids after it]); `known`
    maps the fires the browser holds to the signature it holds (None: send the card again);
    `shown_proposals` are proposals after the cursor the browser holds already. Blocking reads run on
    executor threads."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_seconds
    client = aioredis.from_url(settings.REDIS_URL, decode_responses=True)
    pubsub = client.pubsub()
    read = in_thread(progress)
    fire_html = in_thread(render_fire)
    proposal_html = in_thread(render_proposal)
    try:
        await pubsub.psubscribe(channel_for("*"))
        yield "retry: 2000\n\n"
        while True:
            states, new_proposals = await read(cursor.proposal_id)
            for fire_id, (created_at, signature) in reversed(list(states.items())):  # oldest first: newest on top
                if fire_id not in known:
                    cursor.fires_until = max(filter(None, (cursor.fires_until, created_at)))
                    yield sse_event("fire-new", await fire_html(fire_id), cursor)
                elif known[fire_id] != signature:
                    yield sse_event(f"fire-{fire_id}", await fire_html(fire_id), cursor)
            known = {fire_id: signature for fire_id, (_, signature) in states.items()}
            for proposal_id in new_proposals:
                cursor.proposal_id = max(cursor.proposal_id, proposal_id)
                if proposal_id not in shown_proposals:
                    yield sse_event("proposal-new", await proposal_html(proposal_id), cursor)
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            message = await pubsub.get_message(ignore_subscribe_messages=True,
                                               timeout=min(POLL_SECONDS, remaining))
            if message is None:
                yield KEEPALIVE
            else:  # a burst of notifications (one per tool call) becomes one read
                await asyncio.sleep(0.2)
                while await pubsub.get_message(ignore_subscribe_messages=True, timeout=0):
                    pass
    finally:
        await pubsub.aclose()
        await client.aclose()


def fire_signature(*, status: str, phase: str, model_calls: int, turns: int) -> str:
    """What tells that a fire's card changed: its status, phase, model calls and recorded turns."""
    return f"{status}.{phase}.{model_calls}.{turns}"


def known_fires(states: dict, *, shown: dict, until: datetime | None, cursor: Cursor | None) -> dict:
    """The fires the browser holds and the signature it holds them at. A reconnect's cursor: every
    fire up to it (sent again, since it may have moved on meanwhile). A page: the fires it showed, at
    the signatures it rendered, and the older ones it did not show (created before it was read,
    `until`, less COMMIT_MARGIN), which are not new to it."""
    if cursor is not None:
        return {fire_id: None for fire_id, (created_at, _) in states.items()
                if cursor.fires_until is not None and created_at <= cursor.fires_until}
    known = {fire_id: signature for fire_id, signature in shown.items() if fire_id in states}
    for fire_id, (created_at, signature) in states.items():
        if fire_id not in known and until is not None and created_at <= until - COMMIT_MARGIN:
            known[fire_id] = signature
    return known


def newest_held(states: dict, *, shown: dict, until: datetime | None) -> datetime | None:
    """Where a page's cursor starts: when it was read, or its newest fire when that one came while it
    was read (a reconnect must not send it as new)."""
    return max(filter(None, (until, *(states[fire_id][0] for fire_id in shown if fire_id in states))), default=None)
