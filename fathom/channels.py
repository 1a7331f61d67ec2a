"""Redis channels a process reads without waiting, so what one process changes every other one hears
before its next read, at no round trip.

A process subscribes to a channel once (`Subscription`), at its first look. `take()` returns what Redis
has delivered to the subscription's socket since the last look (a non-blocking read, no network wait)
and whether the subscription was made anew (the first look, one after the connection dropped, or the
first in a forked child), in which case what was published before is lost and a cache kept coherent by
the channel must be dropped. Redis writes a published message to every subscriber in the same pass as
it answers the publisher, so a change published before anyone is told of it is heard at the next look.

Within `one_look()` each subscription is read at its first look only, and one poll of all their sockets
at its start tells which have anything to read: a proxied call hears what was published before it
arrived (it is in the sockets by then) at the cost of one system call, not one per look of its caches.

`version(key)` and `version_bump(key)` build on one channel: a version number in Redis that names the
state of something every process caches (the model registry, the proxy's routes, the loop detector's
thresholds). A bump increments the key and publishes its name; `version` answers from this process's
memory, reading a key again (one GET) only when it was bumped or the subscription was made anew."""

from __future__ import annotations

import os
import select
import threading
import weakref
from collections.abc import Iterator
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
        self.readable = None  # (poll, socket): a look at a quiet channel is one system call
        self.lock = threading.Lock()
        _subscriptions.add(self)

    def take(self) -> Heard:
        heard = Heard()
        looked = _looked.get()
        if looked is not None:
            if self in looked:
                return heard
            looked.add(self)
        with self.lock:
            if self.pid != _pid:  # a forked child: the parent's socket is not ours to read or close
                self.pid, self.pubsub = _pid, None
            try:
                self._take(heard)
            except RedisError:  # the connection dropped: subscribe again (every cache drops), once
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
        elif self._quiet():
            return
        while (message := self.pubsub.get_message(timeout=0.0)) is not None:
            self._read(message, heard)

    def _quiet(self) -> bool:
        """Nothing arrived on the socket since the last look read it to its last message (one poll);
        a socket it has not polled yet (the first look, one redis-py made anew) is read instead."""
        sock = self._socket()
        if sock is None:
            return False
        if self.readable is None or self.readable[1] is not sock:
            ready = select.poll()
            ready.register(sock, select.POLLIN)
            self.readable = (ready, sock)
            return False
        return not self.readable[0].poll(0)

    def _socket(self):
        """The subscription's socket in this process, or None (not subscribed here, or dropped)."""
        connection = self.pubsub.connection if self.pubsub is not None and self.pid == _pid else None
        return connection._sock if connection is not None else None

    def _read(self, message, heard: Heard) -> None:
        if message is None:
            raise RedisError(f"Redis did not confirm the subscription to {self.channel}")
        if message["type"] == "subscribe":
            heard.resubscribed = True
        elif message["type"] == "message":
            heard.messages.append(message["data"])


def current_pid() -> int:
    """This process's id without a system call (os.getpid() is one): kept by a fork hook."""
    return _pid


@contextmanager
def one_look() -> Iterator[None]:
    """Meanwhile, each subscription is read once at most (what it said was applied then), and not at
    all when it had nothing to read at the start (one poll of them all)."""
    token = _looked.set(_quiet_subscriptions())
    try:
        yield
    finally:
        _looked.reset(token)


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


def _quiet_subscriptions() -> set[Subscription]:
    """The subscriptions whose sockets have nothing to read now (one poll of them all)."""
    sockets = {}
    for subscription in list(_subscriptions):
        with subscription.lock:
            sock = subscription._socket()
            if sock is not None:
                sockets[sock.fileno()] = subscription
    if not sockets:
        return set()
    ready = select.poll()
    for fd in sockets:
        ready.register(fd, select.POLLIN)
    for fd, _event in ready.poll(0):
        del sockets[fd]
    return set(sockets.values())


def _forked() -> None:
    global _pid
    _pid = os.getpid()


_pid = os.getpid()  # os.getpid() is a system call: a look compares this, kept by the fork hook
os.register_at_fork(after_in_child=_forked)
_subscriptions: weakref.WeakSet[Subscription] = weakref.WeakSet()
_looked: ContextVar[set | None] = ContextVar("fathom_channels_looked", default=None)
_versions = Subscription(VERSIONS_CHANNEL)
_versions_lock = threading.Lock()
_known: dict[str, str] = {}
