"""The worlds this process holds, one per workspace, and what keeps them current: the changes channel
read before each read, and the background thread's rounds. The first world a process uses (a forked
worker child included) subscribes, starts the background thread and registers the push of its counts at
exit (fathom.shutdown): nothing of that happens at import."""

from __future__ import annotations

import logging
import threading
import time

from fathom.channels import answering_from_memory, current_pid
from fathom.redis_client import get_redis
from fathom.shutdown import shutdown_register
from festinger.cache import keys
from festinger.cache.background import background_start, background_stop
from festinger.cache.changes import ChangesSubscription, Heard, changes_publish
from festinger.cache.model import World
from festinger.models import WorldConfig

log = logging.getLogger(__name__)

DORMANT_RECHECK_SECONDS = 30.0

_worlds: dict[int, World] = {}
_dormant: dict[int, float] = {}    # workspace id -> when to look again
_registry_lock = threading.Lock()
_changes: ChangesSubscription | None = None


def world(workspace_id: int) -> World | None:
    """The workspace's World, synced with every other process; None while the workspace is dormant.
    Within fathom.channels.from_memory() (`world_held` said it is current), the World as held."""
    if answering_from_memory():
        return _worlds.get(workspace_id)
    _changes_take()
    found = _worlds.get(workspace_id)
    if found is None:
        found = _load(workspace_id)
        if found is None:
            return None
    found.sync()
    return found


def world_held(workspace_id: int) -> bool:
    """Whether `world(workspace_id)` answers now without the database: the workspace's World is held and
    current (what the changes channel said is taken first, and the flushed totals fetched are taken in),
    or the workspace is dormant."""
    _changes_take()
    found = _worlds.get(workspace_id)
    if found is None:
        return _dormant.get(workspace_id, 0) > time.monotonic()
    if found.stale:
        return False
    found.totals_take()
    return True


def held(workspace_id: int) -> World | None:
    """The workspace's World if this process holds one, as it is: never loaded or synced for the asking."""
    return _worlds.get(workspace_id)


def note_write(workspace_id: int) -> None:
    """A write to the workspace's graph committed: every process reloads before its next read."""
    changes_publish(workspace_id)
    _changed(workspace_id)


def world_reload(workspace_id: int) -> World | None:
    """The operator's reload: this process reloads everything now, every other one before its next read."""
    note_write(workspace_id)
    loaded = _worlds.get(workspace_id)
    if loaded is None:
        return world(workspace_id)
    loaded.stale = False
    loaded.load()
    return loaded


def forget(workspace_id: int | None = None) -> None:
    """Drop cached worlds (all of them by default), pushing their counts first."""
    for pk in list(_worlds) if workspace_id is None else [workspace_id]:
        found = _worlds.pop(pk, None)
        if found is not None:
            found.push()
        _dormant.pop(pk, None)


def push_all() -> None:
    """Push every world's unpushed counts to Redis: at process exit, so no count is lost."""
    for found in list(_worlds.values()):
        try:
            found.push()
        except Exception:  # exiting: Redis may be gone; say so rather than fail the exit
            log.exception("festinger: could not push the counts of workspace %s", found.workspace_id)


def changes_subscription() -> ChangesSubscription | None:
    """This process's subscription to the changes channel (None before its first world)."""
    return _changes


def _load(workspace_id: int) -> World | None:
    if _dormant.get(workspace_id, 0) > time.monotonic():
        return None
    with _registry_lock:
        if workspace_id in _worlds:
            return _worlds[workspace_id]
        if not WorldConfig.objects.filter(workspace_id=workspace_id).exists():
            _dormant[workspace_id] = time.monotonic() + DORMANT_RECHECK_SECONDS
            return None
        _dormant.pop(workspace_id, None)
        loaded = World(workspace_id)
        loaded.flushed = get_redis().get(keys.FLUSHED.format(ws=workspace_id))
        loaded.load()  # after subscribing (`world`): a write committed from here on is heard of
        _worlds[workspace_id] = loaded
        return loaded


def _changed(workspace_id: int) -> None:
    found = _worlds.get(workspace_id)
    if found is not None:
        found.stale = True
    _dormant.pop(workspace_id, None)


def _changes_take() -> None:
    """Take the changes delivered to this process; the first call in a process (a forked worker child
    included) subscribes and starts its background work."""
    if _changes is None or _changes.pid != current_pid():
        with _registry_lock:
            if _changes is None or _changes.pid != current_pid():
                _process_start()
    _changes_apply(_changes.take())


def _process_start() -> None:
    """This process's first world: subscribe, start the background thread, and have the counts pushed
    before the process exits (last registered runs first: the thread stops, then the counts go)."""
    global _changes
    _changes = ChangesSubscription()
    background_start(_background_round)
    shutdown_register(push_all)
    shutdown_register(background_stop)


def _changes_apply(heard: Heard) -> None:
    if heard.resubscribed:  # the first subscription, or one after the connection dropped
        for found in list(_worlds.values()):
            found.stale = True
    for workspace_id in heard.workspace_ids:
        _changed(workspace_id)


def _background_round() -> None:
    """Push this process's counts, fetch the totals of a flush for the worlds to take at their next
    read, and read the changes channel (an idle process's socket does not fill up)."""
    worlds = list(_worlds.values())
    if not worlds:
        return
    for found in worlds:
        found.push()
    redis = get_redis()
    for found, flushed in zip(worlds, redis.mget([keys.FLUSHED.format(ws=w.workspace_id) for w in worlds]),
                              strict=True):
        if flushed != found.flushed:
            found.staged_totals = redis.hgetall(keys.TOTALS.format(ws=found.workspace_id))
            found.flushed = flushed
    _changes_apply(_changes.take())
