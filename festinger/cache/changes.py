"""A process's subscription to the changes channel: every committed write to a workspace's graph is
published there (`registry.note_write`), and every process reads it before each read of a world
(fathom.channels: without waiting)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fathom import channels
from fathom.redis_client import get_redis
from festinger.cache import keys


@dataclass(slots=True)
class Heard:
    """What the channel said since the last look: the workspaces written to, and whether the
    subscription was (re)made, in which case what was published before is lost and every world is stale."""

    workspace_ids: list[int] = field(default_factory=list)
    resubscribed: bool = False


class ChangesSubscription(channels.Subscription):
    def __init__(self):
        super().__init__(keys.CHANGES)

    def take(self) -> Heard:
        heard = super().take()
        return Heard([int(data) for data in heard.messages], heard.resubscribed)


def changes_publish(workspace_id: int) -> None:
    """Tell every process the workspace's graph changed."""
    get_redis().publish(keys.CHANGES, workspace_id)
