"""A process's subscription to the changes channel: every committed write to a workspace's graph is
published there (`registry.note_write`), and every process reads it before each read of a world."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from redis.exceptions import RedisError

from fathom.redis_client import get_redis
from festinger.cache import keys

SUBSCRIBE_TIMEOUT_SECONDS = 5


@dataclass(slots=True)
class Heard:
    """What the channel said since the last look: the workspaces written to, and whether the
    subscription was (re)made, in which case what was published before is lost and every world is stale."""

    workspace_ids: list[int] = field(default_factory=list)
    resubscribed: bool = False


class ChangesSubscription:
    """`take` reads what Redis has delivered to the socket without waiting for more (no round trip);
    a subscription that dropped is made again, once."""

    def __init__(self):
        self.pid = os.getpid()
        self.pubsub = None
        self.lock = threading.Lock()

    def take(self) -> Heard:
        heard = Heard()
        with self.lock:
            try:
                self._take(heard)
            except RedisError:  # the connection dropped: subscribe again (everything reloads), once
                self.pubsub.close()
                self.pubsub = None
                self._take(heard)
        return heard

    def _take(self, heard: Heard) -> None:
        if self.pubsub is None:
            self.pubsub = get_redis().pubsub()
            self.pubsub.subscribe(keys.CHANGES)
            # Wait for the confirmation: from then on no write goes unheard.
            self._read(self.pubsub.get_message(timeout=SUBSCRIBE_TIMEOUT_SECONDS), heard)
        while (message := self.pubsub.get_message(timeout=0.0)) is not None:
            self._read(message, heard)

    @staticmethod
    def _read(message, heard: Heard) -> None:
        if message is None:
            raise RedisError("festinger: Redis did not confirm the subscription to the changes channel")
        if message["type"] == "subscribe":
            heard.resubscribed = True
        elif message["type"] == "message":
            heard.workspace_ids.append(int(message["data"]))


def changes_publish(workspace_id: int) -> None:
    """Tell every process the workspace's graph changed."""
    get_redis().publish(keys.CHANGES, workspace_id)
