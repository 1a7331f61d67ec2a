"""Redis channels a process reads without waiting, so what one process changes every other one hears
before its next read, at no round trip.

A process subscribes to a channel once (`Subscription`), at its first look. `take()` returns what Redis
has delivered to the subscription since the last look (redis-py's `PubSub.get_message(timeout=0)`: a
non-blocking read of the socket, no network wait) and whether the subscription was made anew (the
first look, one after the connection dropped, or the first in a forked child), in which case what was
published before is lost and a cache kept coherent by the channel must be dropped. Redis writes a
published message to every subscriber in the same pass as it answers the publisher, so a change
published before anyone is told of it is heard at the next look.

`version(key)` and `version_bump(key)` build on one channel: a version number in Redis that names the
state of something every process caches (the model registry, the proxy's routes, the loop detector's
thresholds). A bump increments the key and publishes its name; `version` answers from this process's
memory, reading a key again (one GET) only when it was bumped or the subscription was made anew.
`VersionedCache` is a process's cache of what such versions name, dropped whole when one changes.

`from_memory()` is for code that must not wait on the database (the proxy's event loop): having asked
the caches it reads whether they hold what it needs, current (each cache kept coherent by a channel has
a `..._held` check for it), it reads them within `from_memory()`, where they answer from what this
process holds without listening to their channel again, so a change another thread hears meanwhile
cannot send them to the database; the change is read at the next use."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from redis.exceptions import RedisError

from fathom.redis_client import get_redis

SUBSCRIBE_TIMEOUT_SECONDS = 5
VERSIONS_CHANNEL = "fathom:versions"


@dataclass(slots=True)
class Heard:
    """What a channel said since the last look; `resubscribed`: everything published before is lost."""

    messages: list[str] = field(default_factory=list)
    resubscribed: bool = False


class Subscription:
    """This process's subscription to one channel (thread-safe; made again after a fork or a drop)."""

    def __init__(self, channel: str):
        self.channel = channel
        self.pid = _pid
        self.pubsub = None
        self.lock = threading.Lock()

    def take(self) -> Heard:
        heard = Heard()
        with self.lock:
            if self.pid != _pid:  # a forked child: the parent's connection is not ours to read or close
                self.pid, self.pubsub = _pid, None
            try:
                self._take(heard)
            except RedisError:  # the connection dropped for good: subscribe again (every cache drops), once
                if self.pubsub is not None:
                    self.pubsub.close()
                self.pubsub = None
                self._take(heard)
        return heard

    def _take(self, heard: Heard) -> None:
        if self.pubsub is None:
            self.pubsub = get_redis().pubsub()
            self.pubsub.subscribe(self.channel)
            # Wait for the confirmation: from then on nothing published goes unheard.
            self._read(self.pubsub.get_message(timeout=SUBSCRIBE_TIMEOUT_SECONDS), heard)
        while (message := self.pubsub.get_message(timeout=0.0)) is not None:
            self._read(message, heard)

    def _read(self, message, heard: Heard) -> None:
        if message is None:
            raise RedisError(f"Redis did not confirm the subscription to {self.channel}")
        if message["type"] == "subscribe":  # the first, or redis-py subscribed again after a drop
            heard.resubscribed = True
        elif message["type"] == "message":
            heard.messages.append(message["data"])


def current_pid() -> int:
    """This process's id without a system call (os.getpid() is one): kept by a fork hook."""
    return _pid


@contextmanager
def from_memory() -> Iterator[None]:
    """Meanwhile, the caches kept coherent by a channel answer from what this process holds (see the
    module docstring)."""
    token = _from_memory.set(True)
    try:
        yield
    finally:
        _from_memory.reset(token)


def answering_from_memory() -> bool:
    """Whether the caches answer from what this process holds now (`from_memory`)."""
    return _from_memory.get()


def version(key: str) -> str:
    """The version `key` holds ("0" before its first bump), from memory unless it was bumped."""
    with _versions_lock:
        heard = _versions.take()
        if heard.resubscribed:
            _known.clear()
        for bumped in heard.messages:
            _known.pop(bumped, None)
        found = _known.get(key)
        if found is None:
            found = _known[key] = get_redis().get(key) or "0"
        return found


def version_bump(key: str) -> None:
    """Every process reads what `key` names again from its next use on."""
    with get_redis().pipeline(transaction=True) as pipe:
        pipe.incr(key)
        pipe.publish(VERSIONS_CHANNEL, key)
        pipe.execute()


class VersionedCache:
    """This process's answers (by key) about the state that `versions()` (a `version`, or a tuple of
    them) names, all dropped when it changes; thread-safe. An answer read while a change lands is not
    kept."""

    def __init__(self, versions: Callable[[], Hashable]):
        self.versions = versions
        self.lock = threading.Lock()
        self.answers: dict = {}
        self.answers_at: Hashable = None  # the versions `answers` hold

    def get(self, key: Hashable, read: Callable[[], object]):
        """The answer for `key` at the current versions: held, or `read()` now (None is an answer)."""
        current = self.versions()
        with self.lock:
            if self.answers_at != current:
                self.answers.clear()
                self.answers_at = current
            if key in self.answers:
                return self.answers[key]
        found = read()
        with self.lock:
            if self.answers_at == current:
                self.answers[key] = found
        return found

    def held(self, key: Hashable) -> tuple[bool, object]:
        """(True, the answer) when this process holds `key`'s, current; else (False, None)."""
        current = self.versions()
        with self.lock:
            if self.answers_at == current and key in self.answers:
                return True, self.answers[key]
        return False, None

    def clear(self) -> None:
        with self.lock:
            self.answers.clear()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


_pid = os.getpid()  # os.getpid() is a system call: a look compares this, kept by the fork hook
os.register_at_fork(after_in_child=_forked)
_from_memory: ContextVar[bool] = ContextVar("fathom_channels_from_memory", default=False)
_versions = Subscription(VERSIONS_CHANNEL)
_versions_lock = threading.Lock()
_known: dict[str, str] = {}
