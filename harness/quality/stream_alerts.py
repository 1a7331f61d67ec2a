"""The stream monitor (.stream_monitor) as a listener of a wrapped fire's model turns (harness.fires.turn_stream,
opened by harness.quality.hooks): while the main model writes an attempt, its text (and the body of
its respond call, as that call completes) goes through the attempt's StreamMonitor, and each alert
is a `harness_stream_alert` event committed at once, so the client reads it before the answer ends.

One monitor per attempt, kept in the run's FireQuality across the attempt's model turns; an alert is
recorded on the attempt as it is sent, so each checkpoint alerts at most once per attempt (a fire
resumed in another process skips the checkpoints that alerted already). When nothing streamed (a
provider that does not stream, a resumed fire), the post-flight checks the final answer instead."""

import json

from django.db import connection, transaction

from harness.quality.events import emitting
from harness.quality.run_state import FireQuality


class AttemptMonitor:
    def __init__(self, state: FireQuality):
        self.state = state

    def feed(self, chunk) -> None:
        text = chunk.text
        if chunk.tool_call is not None and chunk.tool_call.name == "respond":
            arguments = chunk.tool_call.arguments
            text = str(arguments.get("body") or "") if isinstance(arguments, dict) else ""
        if not text:
            return
        alerts = self.state.stream_monitor().feed(text)
        if alerts:
            alert_record(self.state, [alert.as_event() for alert in alerts])


def alert_record(state: FireQuality, alerts: list[dict]) -> None:
    """Record the alerts on the current attempt and send them as harness_stream_alert events, in one
    transaction of their own (the caller is in none: it streams)."""
    fire, run, attempt = state.fire, state.run, state.attempt
    with transaction.atomic(), emitting(fire, run) as step:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE harness_qualityattempt SET stream_alerts = stream_alerts || %s::jsonb WHERE id = %s",
                           [_json(alerts), attempt.pk])
        for alert in alerts:
            step.emit("harness_stream_alert", {**alert, "attempt": attempt.number})
    attempt.stream_alerts = [*attempt.stream_alerts, *alerts]


def _json(value) -> str:
    return json.dumps(value)
