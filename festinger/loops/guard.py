"""The loop detector (seed 002, T02) and its mitigations (T03), per conversation.

A proxied call's conversation is named by the proxy (festinger.loops.conversations: the client's
`X-Festinger-Session`, OpenAI's `user`, else the fingerprint of its history's opening; on the main
port, scoped by the API key); a one-shot request (no name, no answer in its history yet) is followed
nowhere. A call outside the proxy (a fire's) is named by its opening within its trace, so two fires
asking alike are not one conversation. Only the calls of the roles in `roles` are watched (a fire's `main` loop and the
proxy). Its state lives in Redis, so every process of the stack sees the same conversation; which
conversations have one at all, every process knows without asking (`looping`), so a call of any other
costs no round trip:

- detection, as soon as an answer is whole (`loop_observe`: the proxy calls it as the answer's last bytes
  go out, and the conversation's next turn waits for it, so that turn, however soon, meets the state it
  left): the same normalised assistant
  output `repeat_count` times within the last `window` outputs; the same tool calls with the same
  arguments repeating with a period of at most `cycle_max_period` calls, `cycle_repeats` times; a piece
  of text repeating `stream_repeats` times in a row inside one answer, streamed or whole
  (`StreamRepetition`: the proxy cuts the answer there). An output or call sequence once detected counts
  again at its next repetition.
- mitigations, decided before each call from that state, escalating with the conversation's detections:
  a temperature boost (from the first), a system note forbidding the repeated action (`forbid_after`),
  the repeated turns dropped from the history (`truncate_after`), and the circuit breaker
  (`breaker_after`): for `breaker_cooldown_seconds` every call is answered that the conversation is
  looping, without the model; after the cool-down the conversation starts again from level 0.

`LoopGuardMiddleware` is model middleware (settings.FATHOM_MODEL_MIDDLEWARE), so fires and proxied
requests get the same treatment. Thresholds are `LoopConfig` rows, read again after every change
(a version key in Redis). Every detection and mitigation is a `LoopEvent` row and a trace event,
written after the response (the open breaker's answers are counted, one row)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from dataclasses import dataclass, fields

from django.db import transaction
from redis.exceptions import RedisError

from fathom.channels import Subscription, answering_from_memory, version, version_bump
from fathom.llm.types import Completion, Message, StopReason
from fathom.redis_client import get_redis
from fathom.tracing.spans import current_span
from festinger.loops.conversations import ConversationName, proxied_conversation
from festinger.loops.models import LoopConfig, LoopEvent

log = logging.getLogger(__name__)

CONFIG_VERSION_KEY = "festinger:loops:config:version"
STATE_TTL_SECONDS = 24 * 3600
BREAKER_PROVIDER = "festinger-loop-breaker"
# Every detection and reset says "+<workspace>:<session>" or "-..." here; the sessions with a state are
# kept in a sorted set per workspace (by the time of their last detection).
LOOPS_CHANNEL = "festinger:loops"
_LOOPING_KEY = "festinger:loops:{ws}:looping"
Kind = LoopEvent.Kind


@dataclass(frozen=True)
class LoopSettings:
    """A workspace's LoopConfig as plain values (the defaults when it has no row)."""

    enabled: bool = True
    roles: tuple = ("main", "proxy")
    repeat_count: int = 3
    window: int = 12
    cycle_max_period: int = 3
    cycle_repeats: int = 3
    stream_min_chars: int = 12
    stream_max_chars: int = 400
    stream_repeats: int = 4
    temperature_boost: float = 0.3
    max_temperature: float = 1.5
    forbid_after: int = 2
    truncate_after: int = 3
    breaker_after: int = 4
    breaker_cooldown_seconds: int = 300

    @classmethod
    def of(cls, row: LoopConfig) -> LoopSettings:
        values = {f.name: getattr(row, f.name) for f in fields(cls)}
        values["roles"] = tuple(role.strip() for role in row.roles.split(",") if role.strip())
        return cls(**values)


# --- thresholds -------------------------------------------------------------------------------------------

_configs: dict[int, tuple[str, LoopSettings]] = {}


def loop_settings(workspace_id: int) -> LoopSettings:
    """The workspace's thresholds as saved now (cached per process until the next change). Within
    fathom.channels.from_memory() (`loop_settings_held` said they are current), as held."""
    if answering_from_memory():
        return _configs[workspace_id][1]
    current = version(CONFIG_VERSION_KEY)
    cached = _configs.get(workspace_id)
    if cached is not None and cached[0] == current:
        return cached[1]
    row = LoopConfig.objects.filter(workspace_id=workspace_id).first()
    found = LoopSettings.of(row) if row is not None else LoopSettings()
    _configs[workspace_id] = (current, found)
    return found


def loop_settings_held(workspace_id: int) -> bool:
    """Whether `loop_settings(workspace_id)` answers now without the database."""
    cached = _configs.get(workspace_id)
    return cached is not None and cached[0] == version(CONFIG_VERSION_KEY)


def loop_config_update(*, workspace, **values) -> LoopConfig:
    """Save the workspace's thresholds; every process uses them from its next call on."""
    row, _ = LoopConfig.objects.get_or_create(workspace=workspace)
    for name, value in values.items():
        setattr(row, name, value)
    row.full_clean()
    row.save()
    config_changed()
    return row


def config_changed() -> None:
    """Every process reads the thresholds again from its next call on (after this commit)."""
    transaction.on_commit(lambda: version_bump(CONFIG_VERSION_KEY))


# --- the middleware ---------------------------------------------------------------------------------------

class LoopGuardMiddleware:
    """Model middleware: mitigations before the call (or the breaker's answer instead of it), detection
    after (unless the proxy did it already, `loop_observe`), and the record. Put it first in the list: it
    names the conversation by the messages as the caller sent them, and an open breaker spares every
    other middleware's work."""

    def before(self, request):
        settings = loop_settings(request.workspace_id)
        if not settings.enabled or request.role not in settings.roles:
            return None
        conversation = conversation_of(request)
        request.metadata["loops"] = {"session": conversation.name, "followed": conversation.followed,
                                     "first_answer_named": conversation.first_answer_named, "events": [], "level": 0}
        if not conversation.followed:
            return None
        try:
            guard = Conversation.of(request.workspace_id, conversation.name)
        except RedisError:
            log.warning("festinger: Redis is unreachable; loop guard skipped", exc_info=True)
            return None
        answer = guard.mitigate(request)
        request.metadata["loops"]["level"] = guard.level
        return answer

    def after(self, request, completion):
        notes = request.metadata.get("loops")
        if notes is None:
            return None
        loop_observe(request, completion, cut=request.metadata.get("loop_stream_cut"))
        if notes["events"]:
            loop_events_record(workspace_id=request.workspace_id, session=notes["session"], events=notes["events"],
                               model=request.model.name, trace_id=request.trace_id)
        return None


def loop_observe(request, completion: Completion, *, cut: str | None = None) -> None:
    """Count `request`'s answer into its conversation, once (the proxy calls this as the answer's last bytes
    go out; the middleware's `after` then only records): its detections join the request's loop
    events. `cut`: the piece whose repetition cut the answer. A one-shot request changes no state; its
    answer cut is recorded as a detection of level 0."""
    notes = request.metadata.get("loops")
    if notes is None or notes.get("observed") or completion.provider == BREAKER_PROVIDER:
        return
    notes["observed"] = True
    try:
        settings = loop_settings(request.workspace_id)
    except RedisError:  # a guard never fails the call it watches
        log.warning("festinger: Redis is unreachable; loop detection skipped", exc_info=True)
        return
    if not notes["followed"]:
        if cut:
            notes["events"].append({"kind": Kind.STREAM_REPETITION, "level": 0, "detail": _cut_detail(cut, settings)})
        return
    answers = [m for m in request.messages if m.role == "assistant"]
    try:
        guard = Conversation.of(request.workspace_id, notes["session"])
        if notes.get("first_answer_named") and len(answers) == 1:  # its second turn: the first answer counts now
            notes["events"].extend(guard.observe(Completion(text=answers[0].content,
                                                            tool_calls=tuple(answers[0].tool_calls))))
        notes["events"].extend(guard.observe(completion, cut=cut))
    except RedisError:
        log.warning("festinger: Redis is unreachable; loop detection skipped", exc_info=True)


def conversation_of(request) -> ConversationName:
    """The conversation of a call: the proxy's (festinger.loops.conversations), else a fire's: its opening
    (system prompt and first user message) within its trace, followed from its first call."""
    proxied = proxied_conversation.get()
    if proxied is not None:
        return proxied
    return fire_conversation(trace_id=request.trace_id,
                             system=next((m.content for m in request.messages if m.role == "system"), ""),
                             first_user=next((m.content for m in request.messages if m.role == "user"), ""))


def fire_conversation(*, trace_id: str, system: str, first_user: str) -> ConversationName:
    """A fire's conversation: its system prompt and first user message, within its trace."""
    digest = hashlib.sha256(f"{trace_id}\x00{system}\x00{first_user}".encode()).hexdigest()[:32]
    return ConversationName(name=f"fp:{digest}", named=False, followed=True)


@dataclass
class Conversation:
    """One conversation's loop state, read from Redis."""

    workspace_id: int
    session: str
    settings: LoopSettings
    level: int = 0
    breaker_until: float = 0.0
    outputs: tuple = ()           # hashes of outputs once detected: their next repetition counts again
    cycles: tuple = ()            # tool-call signatures of cycles once detected
    repeated: dict | None = None  # what was repeated last, for the forbidding note
    breaker_answered: int = 0     # calls the open breaker answered since it opened

    @classmethod
    def of(cls, workspace_id: int, session: str) -> Conversation:
        settings = loop_settings(workspace_id)
        state = get_redis().hgetall(_key(workspace_id, session)) if looping(workspace_id, session) else {}
        return cls(workspace_id=workspace_id, session=session, settings=settings,
                   level=int(state.get("level") or 0), breaker_until=float(state.get("breaker_until") or 0),
                   outputs=tuple(json.loads(state.get("outputs") or "[]")),
                   cycles=tuple(json.loads(state.get("cycles") or "[]")),
                   repeated=json.loads(state["repeated"]) if state.get("repeated") else None,
                   breaker_answered=int(state.get("breaker_answered") or 0))

    # before the call

    def mitigate(self, request) -> Completion | None:
        """Apply this conversation's mitigations to `request`; the breaker's answer when it is open."""
        events = request.metadata["loops"]["events"]
        settings, now = self.settings, time.time()
        if self.breaker_until:
            if now < self.breaker_until:
                # Counted, not written row by row: a client hammering an open breaker writes one row.
                self.breaker_answered = get_redis().hincrby(_key(self.workspace_id, self.session), "breaker_answered")
                if self.breaker_answered == 1:
                    events.append({"kind": Kind.BREAKER_ANSWERED, "level": self.level,
                                   "detail": {"seconds_left": round(self.breaker_until - now, 1)}})
                return self._breaker_answer(request, now)
            events.append({"kind": Kind.BREAKER_CLOSED, "level": self.level,
                           "detail": {"answered": self.breaker_answered}})
            self.reset()
        if self.level == 0:
            return None
        if self.level >= settings.breaker_after:
            self.breaker_until = now + settings.breaker_cooldown_seconds
            get_redis().hset(_key(self.workspace_id, self.session), "breaker_until", self.breaker_until)
            events.append({"kind": Kind.BREAKER_OPENED, "level": self.level,
                           "detail": {"cooldown_seconds": settings.breaker_cooldown_seconds}})
            return self._breaker_answer(request, now)
        base = request.options.get("temperature")
        base = float(base) if isinstance(base, int | float) else 0.7
        boosted = round(min(settings.max_temperature, base + settings.temperature_boost * self.level), 3)
        request.options["temperature"] = boosted
        events.append({"kind": Kind.TEMPERATURE_BOOST, "level": self.level,
                       "detail": {"from": base, "to": boosted}})
        if self.level >= settings.truncate_after:
            kept = self._truncated(request.messages)
            dropped = len(request.messages) - len(kept)
            if dropped:
                request.messages = kept
                events.append({"kind": Kind.TRUNCATE_HISTORY, "level": self.level, "detail": {"dropped": dropped}})
        if self.level >= settings.forbid_after and self.repeated:
            note = Message.system(self._forbidding_note())
            request.messages = [*request.messages[:-1], note, *request.messages[-1:]]
            events.append({"kind": Kind.FORBID_ACTION, "level": self.level, "detail": {"note": note.content}})
        return None

    def _breaker_answer(self, request, now: float) -> Completion:
        what = _describe(self.repeated) if self.repeated else "the same thing"
        text = (f"Festinger's loop detector stopped this conversation: it kept repeating {what}. The circuit "
                f"breaker is open for another {max(1, round(self.breaker_until - now))} s; try a different "
                f"approach or start a new conversation.")
        return Completion(text=text, stop_reason=StopReason.OTHER, model=request.model.model, provider=BREAKER_PROVIDER)

    def _forbidding_note(self) -> str:
        return (f"Loop guard: you have repeated {_describe(self.repeated)} several times and it did not move the "
                f"work on. Do not do it again; choose a different action or a different answer.")

    def _truncated(self, messages: list) -> list:
        """The history without the repeated turns: assistant outputs and tool-call cycles once detected,
        with the tool results that answered them. The last message always stays."""
        outputs, cycles = set(self.outputs), set(self.cycles)
        dropped_calls, kept = set(), []
        for index, message in enumerate(messages):
            last = index == len(messages) - 1
            if not last and message.role == "assistant":
                signatures = [_signature(call.name, call.arguments) for call in message.tool_calls]
                if (message.content and _digest(message.content) in outputs) or (
                        signatures and set(signatures) <= cycles):
                    dropped_calls.update(call.id for call in message.tool_calls)
                    continue
            if not last and message.role == "tool" and message.tool_call_id in dropped_calls:
                continue
            kept.append(message)
        return kept

    # after the call

    def observe(self, completion: Completion, *, cut: str | None = None) -> list[dict]:
        """Count the answer into the conversation; the detections it makes (at most one level each)."""
        settings, redis, key = self.settings, get_redis(), _key(self.workspace_id, self.session)
        output = _digest(completion.text) if completion.text.strip() else None
        signatures = [_signature(call.name, call.arguments) for call in completion.tool_calls]
        with redis.pipeline(transaction=False) as pipe:
            if output:
                pipe.lpush(f"{key}:outputs", output)
                pipe.ltrim(f"{key}:outputs", 0, settings.window - 1)
            if signatures:
                pipe.lpush(f"{key}:calls", *signatures)
                pipe.ltrim(f"{key}:calls", 0, settings.window * settings.cycle_max_period - 1)
            pipe.lrange(f"{key}:outputs", 0, -1)
            pipe.lrange(f"{key}:calls", 0, -1)
            pipe.expire(f"{key}:outputs", STATE_TTL_SECONDS)
            pipe.expire(f"{key}:calls", STATE_TTL_SECONDS)
            results = pipe.execute()
        recent_outputs, recent_calls = results[-4], list(reversed(results[-3]))
        found = []
        if output and (output in self.outputs or recent_outputs.count(output) >= settings.repeat_count):
            self.outputs = tuple(dict.fromkeys((*self.outputs, output)))
            self.repeated = {"kind": "output", "text": _clip(completion.text)}
            found.append((Kind.REPEATED_OUTPUT, {"output": _clip(completion.text),
                                                 "times": recent_outputs.count(output)}))
        period = _cycle(recent_calls, settings.cycle_max_period, settings.cycle_repeats) if signatures else None
        if signatures and (period or set(signatures) <= set(self.cycles)):
            cycle = recent_calls[-period:] if period else signatures
            self.cycles = tuple(dict.fromkeys((*self.cycles, *cycle)))
            self.repeated = {"kind": "tools", "calls": [json.loads(s) for s in cycle]}
            found.append((Kind.TOOL_CYCLE, {"calls": self.repeated["calls"], "period": period or len(signatures)}))
        if cut:
            self.repeated = {"kind": "text", "text": _clip(cut)}
            found.append((Kind.STREAM_REPETITION, _cut_detail(cut, settings)))
        if not found:
            return []
        self.level += 1
        now = time.time()
        looping = _LOOPING_KEY.format(ws=self.workspace_id)
        with redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping={"level": self.level, "outputs": json.dumps(self.outputs),
                                    "cycles": json.dumps(self.cycles), "repeated": json.dumps(self.repeated)})
            pipe.expire(key, STATE_TTL_SECONDS)
            pipe.zadd(looping, {self.session: now})
            pipe.zremrangebyscore(looping, 0, now - STATE_TTL_SECONDS)
            pipe.publish(LOOPS_CHANNEL, f"+{self.workspace_id}:{self.session}")
            pipe.execute()
        return [{"kind": kind, "level": self.level, "detail": detail} for kind, detail in found]

    def reset(self) -> None:
        key = _key(self.workspace_id, self.session)
        with get_redis().pipeline(transaction=False) as pipe:
            pipe.delete(key, f"{key}:outputs", f"{key}:calls")
            pipe.zrem(_LOOPING_KEY.format(ws=self.workspace_id), self.session)
            pipe.publish(LOOPS_CHANNEL, f"-{self.workspace_id}:{self.session}")
            pipe.execute()
        self.level, self.breaker_until, self.outputs, self.cycles, self.repeated = 0, 0.0, (), (), None


class StreamRepetition:
    """Watches one streamed answer: `feed(delta)` returns the repeating piece once the text ends with
    a piece of `min_chars`..`max_chars` characters repeated `repeats` times in a row (the shortest such
    piece). A look costs a few searches in C whatever the lengths: a piece repeated at least twice ends
    with the text's last `min_chars` characters one period earlier too, so only the periods at which
    those characters occur again are tried."""

    def __init__(self, settings: LoopSettings):
        self.settings = settings
        self.min_chars, self.max_chars, self.repeats = (settings.stream_min_chars, settings.stream_max_chars,
                                                        max(2, settings.stream_repeats))
        self.keep = self.max_chars * self.repeats
        self.tail = ""
        self.unchecked = 0

    def feed(self, delta: str) -> str | None:
        if not delta:
            return None
        self.tail = (self.tail + delta)[-self.keep:]
        self.unchecked += len(delta)
        if self.unchecked < self.min_chars:
            return None
        self.unchecked = 0
        tail, shortest = self.tail, self.min_chars
        longest = min(self.max_chars, len(tail) // self.repeats)
        if longest < shortest:
            return None
        last = tail[-shortest:]
        lowest, end = len(tail) - shortest - longest, len(tail) - shortest
        while (at := tail.rfind(last, lowest, end)) >= 0:  # nearest first: the shortest period first
            unit = tail[at + shortest - len(tail):]
            if tail.endswith(unit * self.repeats) and unit.strip():
                return unit
            end = at + shortest - 1
        return None

    def cut_of(self, text: str) -> tuple[str, str] | None:
        """A whole answer read as if it streamed in pieces of `min_chars`: (its text up to the end of the
        repeating piece's `repeats`-th time, the piece), or None when it does not repeat itself. The piece
        is taken where its repetition begins (a look mid-answer sees it turned: "ain. I will check ag")."""
        if len(text) < self.min_chars * self.repeats:  # too short to hold any piece `repeats` times
            return None
        step = max(1, self.min_chars)
        for end in range(step, len(text) + step, step):
            unit = self.feed(text[end - step:end])
            if unit is not None:
                period, start = len(unit), end - len(unit)
                while start > 0 and text[start - 1] == text[start - 1 + period]:
                    start -= 1
                return text[:start + period * self.repeats], text[start:start + period]
        return None


def stream_cut_observe(*, workspace_id: int, conversation: ConversationName, completion: Completion, unit: str,
                       model: str = "") -> None:
    """An answer the proxy cut for repeating `unit`, outside the model middleware (a registry model's
    stream): a detection like any other, counted now and recorded."""
    settings = loop_settings(workspace_id)
    if not settings.enabled:
        return
    if conversation.followed:
        try:
            events = Conversation.of(workspace_id, conversation.name).observe(completion, cut=unit)
        except RedisError:
            log.warning("festinger: Redis is unreachable; loop detection skipped", exc_info=True)
            return
    else:
        events = [{"kind": Kind.STREAM_REPETITION, "level": 0, "detail": _cut_detail(unit, settings)}]
    loop_events_record(workspace_id=workspace_id, session=conversation.name, events=events, model=model)


# --- which conversations have a state -------------------------------------------------------------------

def looping(workspace_id: int, session: str) -> bool:
    """Whether the conversation has a loop state (a detection within STATE_TTL_SECONDS), from this
    process's copy of the workspace's looping conversations: no round trip for the others. Every
    detection and reset is published (LOOPS_CHANNEL) and heard here before the answer."""
    with _looping_lock:
        heard = _loops.take()
        if heard.resubscribed:
            _looping.clear()
        for message in heard.messages:
            workspace, _, name = message[1:].partition(":")
            sessions = _looping.get(int(workspace))
            if sessions is not None:
                (sessions.add if message[0] == "+" else sessions.discard)(name)
        sessions = _looping.get(workspace_id)
        if sessions is None:
            sessions = _looping[workspace_id] = set(get_redis().zrangebyscore(
                _LOOPING_KEY.format(ws=workspace_id), time.time() - STATE_TTL_SECONDS, "+inf"))
        return session in sessions


_loops = Subscription(LOOPS_CHANNEL)
_looping: dict[int, set[str]] = {}
_looping_lock = threading.Lock()


@dataclass(frozen=True)
class LoopState:
    """A conversation's loop state as the guard holds it now: its level (detections since it last started
    again) and its circuit breaker (`breaker_until`: a Unix time, 0 when it never opened)."""

    level: int = 0
    breaker_until: float = 0.0

    @property
    def breaker(self) -> str:
        """closed; open (every call answered by the breaker); cooled (the next call closes it)."""
        if not self.breaker_until:
            return "closed"
        return "open" if self.breaker_until > time.time() else "cooled"

    @property
    def seconds_left(self) -> int:
        return max(0, round(self.breaker_until - time.time()))


def loop_states(*, workspace_id: int, sessions) -> dict[str, LoopState]:
    """{session: LoopState} of these conversations, in one round trip (a conversation Redis no longer
    holds, its state expired or started again, is level 0 with its breaker closed). Raises RedisError."""
    sessions = list(sessions)
    if not sessions:
        return {}
    with get_redis().pipeline(transaction=False) as pipe:
        for session in sessions:
            pipe.hmget(_key(workspace_id, session), "level", "breaker_until")
        found = pipe.execute()
    return {session: LoopState(level=int(level or 0), breaker_until=float(until or 0))
            for session, (level, until) in zip(sessions, found, strict=True)}


# --- the record -------------------------------------------------------------------------------------------

def loop_events_record(*, workspace_id: int, session: str, events: list[dict], model: str = "",
                       trace_id: str = "") -> list[LoopEvent]:
    """Keep each detection and mitigation as a LoopEvent row and as an event of the current span."""
    rows = LoopEvent.objects.bulk_create(
        LoopEvent(workspace_id=workspace_id, session=session, kind=str(event["kind"]), level=event["level"],
                  model=model[:200], detail=event.get("detail") or {}, trace_id=trace_id or "")
        for event in events)
    span = current_span()
    if span is not None and hasattr(span, "event"):
        for event in events:
            span.event(f"festinger.loop.{event['kind']}", session=session, level=event["level"],
                       **(event.get("detail") or {}))
    return rows


# --- helpers ----------------------------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def _cut_detail(cut: str, settings: LoopSettings) -> dict:
    return {"repeated": _clip(cut), "times": settings.stream_repeats}


def _key(workspace_id: int, session: str) -> str:
    return f"festinger:loop:{workspace_id}:{session}"


def _digest(text: str) -> str:
    return hashlib.sha1(_SPACE.sub(" ", text.strip().lower()).encode()).hexdigest()[:20]


def _signature(name: str, arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments}, sort_keys=True, separators=(",", ":"))


def _cycle(calls: list[str], max_period: int, repeats: int) -> int | None:
    """The shortest period p <= max_period with which the last p*repeats calls repeat, if any."""
    for period in range(1, max_period + 1):
        span = period * repeats
        if len(calls) < span:
            break
        tail = calls[-span:]
        if all(tail[i] == tail[i % period] for i in range(span)):
            return period
    return None


def _describe(repeated: dict) -> str:
    if repeated.get("kind") == "tools":
        calls = ", ".join(f"{c['name']}({json.dumps(c['arguments'], sort_keys=True)[:120]})"
                          for c in repeated.get("calls", []))
        return f"the tool calls {calls}"
    return f"the answer {json.dumps(repeated.get('text', ''))}"


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["LoopGuardMiddleware", "LoopSettings", "LoopState", "StreamRepetition", "config_changed",
           "conversation_of", "fire_conversation", "loop_config_update", "loop_observe",
           "loop_events_record", "loop_settings", "loop_states", "stream_cut_observe"]
