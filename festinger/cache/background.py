"""A process's background thread: every PUSH_SECONDS it runs a round (festinger/cache/registry.py's: push
this process's counts to Redis, fetch the totals of a flush, read the changes channel), never on the read
path. Started by the first world a process uses, stopped by `background_stop` (at exit, through
fathom.shutdown)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from redis.exceptions import RedisError

log = logging.getLogger(__name__)

PUSH_SECONDS = 5.0  # how long counts may wait in a process before they go to Redis

_stopping = threading.Event()


def background_start(round_: Callable[[], None]) -> threading.Thread:
    """Start this process's background thread, running `round_` every PUSH_SECONDS."""
    thread = threading.Thread(target=_loop, args=(round_,), name="festinger-background", daemon=True)
    thread.start()
    return thread


def background_stop() -> None:
    """Stop this process's background thread after its round: at exit (the counts left are pushed by
    `push_all`), and before a test run stops its Redis."""
    _stopping.set()


def _loop(round_: Callable[[], None]) -> None:
    unreachable = False
    while not _stopping.wait(PUSH_SECONDS):
        try:
            round_()
        except RedisError as exc:  # counts wait in memory until Redis is back; said once, not every round
            if not unreachable:
                log.warning("festinger: Redis unreachable (%s); counts kept until it is back", exc)
            unreachable = True
            continue
        except Exception:
            log.exception("festinger: pushing counts or fetching totals failed; next try in %s s", PUSH_SECONDS)
        if unreachable:
            log.info("festinger: Redis reachable again; counts pushed")
            unreachable = False
