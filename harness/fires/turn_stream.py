"""What a fire's model turn streams to while the model writes: a set of listeners opened for each
model turn, handed every chunk as it arrives, and closed with the finished completion.

`settings.FATHOM_TURN_STREAM_LISTENERS` lists dotted paths of factories (a class, or a function)
called once per model turn with a `StreamedTurn`; each returns a listener, or None to sit this turn
out. A listener has `feed(chunk)` (a `fathom.llm.StreamChunk`: a text delta or a finished tool
call; what it returns is ignored) and may have `close(completion)`, called once the call has
returned (not when it failed: the turn is then retried whole, and what was streamed of it is
superseded by the retry's stream). A listener that raises abandons the model call: the exception
leaves the turn as a provider's failure would.

The runtime's own listener is `AgentStreamBatcher` (opened by `agent_stream_open`): the text of a
session's fire as AgentStream events while it is written. A fire's lifecycle hooks add theirs
(harness.fires.hooks: the quality harness's stream monitor), without either knowing the other. The turn itself is still committed
whole, after the call, by the loop."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from fathom.llm import Completion, StreamChunk
from harness.fires.models import Fire
from harness.runtime import claims
from harness.runtime.events import event_emit
from harness.runtime.models import SessionEvent
from harness.runtime.services import harness_settings_get


@dataclass(frozen=True, slots=True)
class StreamedTurn:
    """The model turn a listener is opened for. `call_id` names the model call (its trace span, and
    the turn's AgentStream events)."""

    fire: Fire
    number: int
    phase: str
    call_id: str

    @property
    def in_session(self) -> bool:
        """A session's top-level fire: the one whose turns the session's event stream shows."""
        return bool(self.fire.session_id) and self.fire.depth == 0


class TurnListeners:
    """The listeners of one model turn; `feed` is what `complete(..., stream=...)` is given."""

    def __init__(self, listeners: list):
        self.listeners = listeners

    def __bool__(self) -> bool:
        return bool(self.listeners)

    def feed(self, chunk: StreamChunk) -> None:
        for listener in self.listeners:
            listener.feed(chunk)

    def close(self, completion: Completion) -> None:
        for listener in self.listeners:
            close = getattr(listener, "close", None)
            if close is not None:
                close(completion)


def turn_listeners_open(turn: StreamedTurn, *, also=()) -> TurnListeners:
    """The listeners the settings name, opened for `turn` (those that want it), and `also` (the fire's
    lifecycle hooks' listeners of the turn)."""
    opened = (factory(turn) for factory in _factories(tuple(settings.FATHOM_TURN_STREAM_LISTENERS)))
    return TurnListeners([*(listener for listener in opened if listener is not None), *also])


def agent_stream_open(turn: StreamedTurn) -> AgentStreamBatcher | None:
    """The runtime's listener (in FATHOM_TURN_STREAM_LISTENERS): for a session's fire only."""
    return AgentStreamBatcher(turn) if turn.in_session else None


class AgentStreamBatcher:
    """A session fire's text as the model writes it: AgentStream events carrying `delta` (the text
    since the last one) and `part` (0, 1, 2, ... per model call), the first at once and the next
    at most every `stream_batch_ms` (HarnessSettings), the rest when the call ends. Joined in `part`
    order, the deltas of a call are its whole text; the turn's own AgentStream event (with `text`,
    committed with the turn) follows them, with the same `call_id`."""

    def __init__(self, turn: StreamedTurn):
        self.turn = turn
        self.interval: float | None = None  # read with the first text: a turn of tool calls alone costs nothing
        self.pending: list[str] = []
        self.part = 0
        self.sent_at: float | None = None

    def feed(self, chunk: StreamChunk) -> None:
        if not chunk.text:
            return
        self.pending.append(chunk.text)
        now = time.monotonic()
        if self.sent_at is None:
            self._send(now)
            self.interval = harness_settings_get(workspace_id=self.turn.fire.workspace_id).stream_batch_ms / 1000
        elif now - self.sent_at >= self.interval:
            self._send(now)

    def close(self, completion: Completion) -> None:
        if self.pending:
            self._send(time.monotonic())

    def _send(self, now: float) -> None:
        fire = self.turn.fire
        delta, self.pending = "".join(self.pending), []
        # Each event commits on its own (it is the session's heartbeat too: ClaimLost if another
        # runner took the session over), so a reader sees it at once.
        event_emit(session_id=fire.session_id, workspace_id=fire.workspace_id, kind=SessionEvent.Kind.AGENT_STREAM,
                   data={"fire_id": str(fire.pk), "turn": self.turn.number, "phase": self.turn.phase,
                         "call_id": self.turn.call_id, "part": self.part, "delta": delta},
                   turn=fire.turn, runner=claims.runner_id())
        self.part += 1
        self.sent_at = now


@cache
def _factories(paths: tuple[str, ...]) -> tuple:
    return tuple(import_string(path) for path in paths)


@receiver(setting_changed)
def _reload(setting, **_kwargs):
    if setting == "FATHOM_TURN_STREAM_LISTENERS":
        _factories.cache_clear()
