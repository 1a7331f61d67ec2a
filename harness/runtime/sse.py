"""Server-Sent Events for the numbered event streams (a session's, a conductor run's), served by the
ASGI server, and the JSON pages that poll them (`numbered_events_answer`: one answer for both).

The stream sends every event numbered above the reader's last one (Last-Event-ID), then waits for
a Redis notification (or polls every few seconds, so a lost notification only delays it), with
keep-alive comments. It ends after `max_seconds`; EventSource clients reconnect and resume."""

import asyncio
import json

import redis.asyncio as aioredis
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response

from fathom.api.params import int_param
from fathom.threads import in_thread

KEEPALIVE_SECONDS = 10
BATCH = 200
SSE_MAX_SECONDS = 300

# The query of an event stream (a session's, a run's): SSE or JSON polling, resumable.
EVENT_STREAM_PARAMETERS = [
    OpenApiParameter("after", int, description="only events numbered above this"),
    OpenApiParameter("limit", int, description="JSON form: at most this many (default 200)"),
    OpenApiParameter("timeout", int, description=f"SSE: close after this many seconds (<= {SSE_MAX_SECONDS})"),
    OpenApiParameter("Last-Event-ID", str, OpenApiParameter.HEADER, required=False),
]


class EventStreamRenderer(BaseRenderer):
    """Lets DRF accept `Accept: text/event-stream`; the view streams the body itself."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        # Only errors reach here (the stream is not rendered): send them as one SSE error event.
        return f"event: error\ndata: {json.dumps(data, cls=DjangoJSONEncoder)}\n\n".encode()


def numbered_events_answer(request, *, channel: str, read_after, payload):
    """A numbered event stream's answer to `request` (EVENT_STREAM_PARAMETERS): Server-Sent Events when
    it accepts them (resumable with Last-Event-ID), else a JSON page for polling (`?after=<seq>`) with
    the query that polls for what comes next. `read_after(after=, limit=)` reads the events, `channel`
    is where their writers publish, `payload(event)` is an event's JSON."""
    after = int_param(request.headers.get("Last-Event-ID") or request.query_params.get("after"), "after", 0)
    if request.accepted_renderer.format == "sse":
        timeout = int_param(request.query_params.get("timeout"), "timeout", SSE_MAX_SECONDS)
        return event_stream_response(numbered_event_stream(channel=channel, read_after=read_after, payload=payload,
                                                           after=after,
                                                           max_seconds=min(max(timeout, 1), SSE_MAX_SECONDS)))
    limit = min(max(int_param(request.query_params.get("limit"), "limit", 200), 1), 1000)
    events = list(read_after(after=after, limit=limit))
    last = events[-1].seq if events else after
    return Response({"events": [payload(e) for e in events], "last_seq": last, "next": f"?after={last}"})


def event_stream_response(stream) -> StreamingHttpResponse:
    """The response that sends `stream` (SSE text) as it comes: no cache or proxy holds it back."""
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def event_payload(event) -> dict:
    return {"seq": event.seq, "kind": event.kind, "turn_id": event.turn_id, "data": event.data,
            "created_at": event.created_at}


def format_event(event, payload=event_payload) -> str:
    data = json.dumps(payload(event), cls=DjangoJSONEncoder)
    return f"id: {event.seq}\nevent: {event.kind}\ndata: {data}\n\n"


async def numbered_event_stream(*, channel: str, read_after, payload, after: int, max_seconds: float):
    """Any stream of events numbered by `seq` (a session's, a conductor run's): `read_after(after=,
    limit=)` reads the next ones (in a thread), `channel` is where their writers publish."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_seconds
    client = aioredis.from_url(settings.REDIS_URL, decode_responses=True)
    pubsub = client.pubsub()
    try:
        # Subscribe before the first read, so nothing committed in between goes unnoticed.
        await pubsub.subscribe(channel)
        yield "retry: 2000\n\n"
        fetch = in_thread(lambda **kwargs: list(read_after(**kwargs)))
        while True:
            events = await fetch(after=after, limit=BATCH)
            for event in events:
                after = event.seq
                yield format_event(event, payload)
            if len(events) == BATCH:
                continue
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            message = await pubsub.get_message(ignore_subscribe_messages=True,
                                               timeout=min(KEEPALIVE_SECONDS, remaining))
            if message is None:
                yield ": keep-alive\n\n"
    finally:
        await pubsub.aclose()
        await client.aclose()
