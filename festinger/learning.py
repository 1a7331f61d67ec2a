"""What Festinger learns from a model call: the conversation's own words, each message once.

- The words. Only the content of `user` and `assistant` messages: what the people and the agent say.
  System prompts and tool schemas are the caller's instructions (a fire's are Fathom's own: tool names,
  `cited_ids`, `dispatch_helper`), and tool results are what tools printed (files, logs, the lake's
  rendering with its ids), neither said by anyone: the seed's cue patterns are statements "agents and
  humans" make, and counting the harness's vocabulary filled recollections with zero hits for `ids`
  and `s`. A user message opened by `[harness]` (fathom.llm.types.HARNESS_NOTE: `Message.note`) is a
  note the harness wrote into the conversation (the active plan, the turn cap, a heartbeat's or a
  task's notice, a healing prompt), and a text opened by `[offline]` is the offline model's (Fathom's
  own deterministic stand-in: "answering without a language model"), neither the user's words nor a
  model's: counting them filled a recollection with `offline`, `taskdone`, `missing_requirement`.
- The conversation. The `conversation` option of the call names it (`complete(..., conversation=key)`:
  the proxy's session, a caller's thread); `conversation=False` says the call is no conversation (a
  review pass reading a brief Fathom composed) and nothing is learned from it. Without the option, the
  conversation is the fingerprint of its first user message (what stays put while the history grows),
  and calls of the roles Fathom uses to talk to itself (`SELF_TALK_ROLES`: reading what it composed
  from the lake, as a producer reading forty deltas, or judging an answer; the writer and the
  resolver) learn nothing: their reading is no encounter.
- Once. Each message is known by a hash of its role, content and how many identical messages precede
  it, marked seen per conversation in a Redis set (SADD answers which were unseen, atomically: of two
  processes seeing the same message, one counts it) for `SEEN_SECONDS` after the conversation's last
  call. This process remembers what it saw already, so a long history costs no round trip. The marks
  are sent at once and their answer read when the caller asks (`SeenMarks`): the proxy reads it once
  its upstream answered (festinger/recollection.py `held`), so the two round trips overlap.
- Writer calls. A conversation causes at most `writer_calls_per_conversation` writer model calls and a
  workspace at most `writer_calls_per_hour` per clock hour (WorldConfig, editable in admin): counted in
  Redis by the writer before each call (`writer_call_allow`), checked before a write is queued.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter, OrderedDict
from contextvars import ContextVar

from redis.exceptions import RedisError

from fathom.llm.offline import OFFLINE_NOTICE
from fathom.llm.types import HARNESS_NOTE
from fathom.redis_client import get_redis

LEARNED_ROLES = ("user", "assistant")
SELF_TALK_ROLES = frozenset({"classifier", "planner", "verifier", "focus", "embedder", "producer", "judge",
                             "specialist", "aggregator", "conductor"})
SEEN_SECONDS = 7 * 86400
_SEEN_KEY = "festinger:{ws}:conversation:{conversation}:seen"
_CALLS_KEY = "festinger:{ws}:conversation:{conversation}:writer_calls"
_HOUR_KEY = "festinger:{ws}:writer_calls:{hour}"
_KNOWN_MAX = 100_000

# Set by the proxy around a call the client named (X-Festinger-Session, OpenAI's `user`; None otherwise:
# its first user message names it, as it does a fire's). Fires name theirs in the options.
conversation_session: ContextVar[str | None] = ContextVar("festinger_conversation_session", default=None)
_known: OrderedDict[tuple, None] = OrderedDict()  # (workspace, conversation, message hash) seen already


def conversation_messages(messages) -> list:
    """The messages whose words are the conversation's own (see the module docstring)."""
    return [message for message in messages if message.role in LEARNED_ROLES and said(message.content)]


def said(text: str) -> bool:
    """Whether `text` is someone's words: not empty, not a harness note, not the offline model's."""
    return bool(text) and not text.startswith((HARNESS_NOTE, OFFLINE_NOTICE))


def conversation_key(*, role: str, options: dict, messages) -> str | None:
    """The conversation a call belongs to, or None when nothing is to be learned from it. `messages`
    are the call's conversation messages."""
    named = options.get("conversation")
    if named is False:
        return None
    named = named or conversation_session.get()
    if named:
        return _digest(f"named\0{named}")
    if role in SELF_TALK_ROLES:
        return None
    first = next((message.content for message in messages if message.role == "user"), None)
    return None if first is None else _digest(f"first-user\0{first}")


def message_hashes(messages) -> list[str]:
    """A stable hash per message: role, content and the number of identical messages before it (a
    second "yes" is another message), so a history sent again hashes the same."""
    seen: Counter = Counter()
    hashes = []
    for message in messages:
        seen[(message.role, message.content)] += 1
        hashes.append(_digest(f"{message.role}\0{seen[(message.role, message.content)]}\0{message.content}"))
    return hashes


def unseen(*, workspace_id: int, conversation: str, messages, only_last: bool = False) -> list:
    """The messages the conversation has not counted before (of the last one alone with `only_last`;
    the hashes are still those of its place in all of them), marked seen now (once across all
    processes). Raises RedisError when Redis cannot be reached (the caller learns nothing then)."""
    marks = seen_marks_send(workspace_id=workspace_id, conversation=conversation, messages=messages,
                            only_last=only_last)
    return marks.unseen() if marks is not None else []


def seen_marks_send(*, workspace_id: int, conversation: str, messages, only_last: bool = False) -> SeenMarks | None:
    """Mark seen in Redis the messages this process has not seen marked (see `unseen`), without waiting
    for the answer; None when it knows them all."""
    pairs = list(zip(messages, message_hashes(messages), strict=True))
    asked = [(message, digest) for message, digest in (pairs[-1:] if only_last else pairs)
             if (workspace_id, conversation, digest) not in _known]
    return SeenMarks((workspace_id, conversation), asked) if asked else None


class SeenMarks:
    """A conversation's messages marked seen in Redis (SADD: of two processes marking one message, one
    is told it was unseen). The marks are sent at once and their answer read by `unseen()`, so a caller
    can do other work meanwhile (the proxy: its upstream request); until then they hold a connection
    of the process's pool."""

    def __init__(self, key: tuple[int, str], asked: list[tuple]):
        self.key, self.asked = key, asked
        self._pool = get_redis().connection_pool
        self._connection = self._pool.get_connection()
        self._answer: list | None = None
        try:
            redis_key = _SEEN_KEY.format(ws=key[0], conversation=key[1])
            commands = [("SADD", redis_key, digest) for _message, digest in asked]
            self._connection.send_packed_command(
                self._connection.pack_commands([*commands, ("EXPIRE", redis_key, SEEN_SECONDS)]))
        except BaseException:
            self._release(broken=True)
            raise

    @property
    def messages(self) -> list:
        return [message for message, _digest in self.asked]

    def unseen(self) -> list:
        """The marked messages nobody had seen (now counted by these marks). Raises RedisError when Redis
        did not answer (the caller learns nothing then); the answer is read once."""
        if self._answer is None:
            if self._connection is None:
                raise RedisError("the seen marks were lost with their connection")
            try:
                added = [self._connection.read_response() for _ in range(len(self.asked) + 1)][:-1]
            except BaseException:
                self._release(broken=True)
                raise
            self._release(broken=False)
            for _message, digest in self.asked:
                _remember((*self.key, digest))
            self._answer = [message for (message, _digest), new in zip(self.asked, added, strict=True) if new]
        return self._answer

    def _release(self, *, broken: bool) -> None:
        """Give the connection back to the pool (closed first when its answer was not read to its end)."""
        if self._connection is None:
            return
        if broken:
            self._connection.disconnect()
        self._pool.release(self._connection)
        self._connection = None


def reply_unseen(*, workspace_id: int, conversation: str, messages, reply) -> bool:
    """Whether the model's reply (an assistant message following `messages`) is new to the
    conversation, marking it seen: the next call's history holds it and will not count it again."""
    return bool(unseen(workspace_id=workspace_id, conversation=conversation, messages=[*messages, reply],
                       only_last=True))


def writer_calls_left(*, workspace_id: int, conversation: str | None, per_conversation: int, per_hour: int) -> bool:
    """Whether a write may still be queued: neither cap is spent (read only; the writer counts)."""
    keys = [_HOUR_KEY.format(ws=workspace_id, hour=_hour())]
    if conversation:
        keys.append(_CALLS_KEY.format(ws=workspace_id, conversation=conversation))
    spent = [int(value or 0) for value in get_redis().mget(keys)]
    return spent[0] < per_hour and (not conversation or spent[1] < per_conversation)


def writer_call_allow(*, workspace_id: int, conversation: str | None, per_conversation: int, per_hour: int) -> bool:
    """Take one writer model call from the workspace's hourly cap and the conversation's cap; False
    (nothing taken that matters: the counters only grow past a cap) when either is spent."""
    hour_key = _HOUR_KEY.format(ws=workspace_id, hour=_hour())
    pipe = get_redis().pipeline(transaction=True)
    pipe.incr(hour_key)
    pipe.expire(hour_key, 7200)
    if conversation:
        calls_key = _CALLS_KEY.format(ws=workspace_id, conversation=conversation)
        pipe.incr(calls_key)
        pipe.expire(calls_key, SEEN_SECONDS)
    spent = pipe.execute()
    if spent[0] > per_hour:
        return False
    return not conversation or spent[2] <= per_conversation


def _hour() -> int:
    return int(time.time() // 3600)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _remember(item: tuple) -> None:
    _known[item] = None
    if len(_known) > _KNOWN_MAX:
        _known.popitem(last=False)
