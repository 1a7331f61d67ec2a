"""The live feed: Server-Sent Events for one workspace's dashboard, served by the ASGI server.

It wakes on the session event stream's Redis notifications (every fire of a session emits its turns
and tool calls there) and also every few seconds (fires outside a session, a lost notification),
compares the newest fires' progress with what it saw last, and sends the card of each fire that is
new (`fire-new`) or moved on (`fire-<id>`), rendered by the same template as the page, for htmx's SSE
extension to swap in. New proposals arrive as `proposal-new`. It ends after `max_seconds`; the
browser reconnects, and a page without JavaScript is simply reloaded."""

import asyncio

import redis.asyncio as aioredis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from harness.runtime.events import channel_for

POLL_SECONDS = 3.0
WATCHED_FIRES = 40
KEEPALIVE = ": keep-alive\n\n"


def sse_event(name: str, html: str) -> str:
    data = "\n".join(f"data: {line}" for line in html.splitlines() or [""])
    return f"event: {name}\n{data}\n\n"


async def feed_stream(*, progress, render_fire, render_proposal, known: dict, proposals_after: int,
                      max_seconds: float):
    """`progress()` -> ({fire id: state}, [proposal ids newer than the last seen]); `known` is the
    fires' states the page was rendered with. Blocking reads run on executor threads."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_seconds
    client = aioredis.from_url(settings.REDIS_URL, decode_responses=True)
    pubsub = client.pubsub()
    read = sync_to_async(_closing(progress), thread_sensitive=False)
    fire_html = sync_to_async(_closing(render_fire), thread_sensitive=False)
    proposal_html = sync_to_async(_closing(render_proposal), thread_sensitive=False)
    try:
        await pubsub.psubscribe(channel_for("*"))
        yield "retry: 2000\n\n"
        while True:
            states, new_proposals = await read(proposals_after)
            for fire_id, state in reversed(list(states.items())):  # oldest first, so the newest ends on top
                if fire_id not in known:
                    yield sse_event("fire-new", await fire_html(fire_id))
                elif known[fire_id] != state:
                    yield sse_event(f"fire-{fire_id}", await fire_html(fire_id))
            known = states
            for proposal_id in new_proposals:
                yield sse_event("proposal-new", await proposal_html(proposal_id))
                proposals_after = max(proposals_after, proposal_id)
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


def _closing(function):
    # Runs on an executor thread that no request ends: give its connection back to the pool here.
    def call(*args):
        try:
            return function(*args)
        finally:
            close_old_connections()

    return call
