"""The stream monitor (.stream) as a turn stream listener (harness.fires.streaming, named in
FATHOM_TURN_STREAM_LISTENERS): while the main model writes an attempt of a fire the harness wraps,
its text (and the body of its respond call, as that call completes) goes through the attempt's
StreamMonitor, and each alert is a `harness_stream_alert` event committed at once, so the client
reads it before the answer ends.

One monitor per attempt, kept with the fire's run across the attempt's model turns; an alert is
recorded on the attempt as it is sent, so each checkpoint alerts at most once per attempt (a fire
resumed in another process skips the checkpoints that alerted already). When nothing streamed (a
provider that does not stream, a resumed fire), the post-flight checks the final answer instead."""

import json

from django.db import connection, transaction

from harness.fires.models import Fire
from harness.quality.events import emit, emitting
from harness.quality.flow import attempt_monitor, current_attempt, run_of
from harness.quality.models import QualityAttempt, QualityRun
from harness.quality.stream import StreamMonitor


def monitor_open(turn):
    """The listener of a main-phase model turn of a session fire the harness wraps; None otherwise."""
    if turn.phase != Fire.Phase.MAIN or not turn.in_session:
        return None
    run = run_of(turn.fire)
    if run is None:
        return None
    return AttemptMonitor(turn.fire, run, attempt_monitor(run))


class AttemptMonitor:
    def __init__(self, fire: Fire, run: QualityRun, monitor: StreamMonitor):
        self.fire, self.run, self.monitor = fire, run, monitor

    def feed(self, chunk) -> None:
        text = chunk.text
        if chunk.tool_call is not None and chunk.tool_call.name == "respond":
            arguments = chunk.tool_call.arguments
            text = str(arguments.get("body") or "") if isinstance(arguments, dict) else ""
        if not text:
            return
        alerts = self.monitor.feed(text)
        if alerts:
            alert_record(self.fire, self.run, [alert.as_event() for alert in alerts])


def alert_record(fire: Fire, run: QualityRun, alerts: list[dict]) -> None:
    """Record the alerts on the current attempt and send them as harness_stream_alert events, in one
    transaction of their own (the caller is in none: it streams)."""
    attempt: QualityAttempt = current_attempt(run)
    with transaction.atomic(), emitting(fire, run):
        with connection.cursor() as cursor:
            cursor.execute("UPDATE harness_qualityattempt SET stream_alerts = stream_alerts || %s::jsonb WHERE id = %s",
                           [_json(alerts), attempt.pk])
        for alert in alerts:
            emit(fire, run, "harness_stream_alert", {**alert, "attempt": attempt.number})
    attempt.stream_alerts = [*attempt.stream_alerts, *alerts]


def _json(value) -> str:
    return json.dumps(value)
