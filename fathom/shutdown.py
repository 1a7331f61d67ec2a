"""What a process does before it exits: the parts that started work in it (a background thread, counts
held in memory) register a callback here when they start, and the callbacks run once, last registered
first: at interpreter exit, when a Celery pool process shuts down (it leaves without running atexit), and
when the test run is about to stop its embedded servers. Nothing is registered with Python or Celery
until a first callback is."""

import atexit
import logging
import threading
from collections.abc import Callable

from celery import signals

log = logging.getLogger(__name__)

_callbacks: list[Callable[[], object]] = []
_lock = threading.Lock()
_hooked = False


def shutdown_register(callback: Callable[[], object]) -> None:
    """Run `callback` before this process exits (once, even if registered again)."""
    global _hooked
    with _lock:
        if callback not in _callbacks:
            _callbacks.append(callback)
        if not _hooked:
            atexit.register(shutdown_run)
            signals.worker_process_shutdown.connect(_at_worker_process_shutdown, weak=False, dispatch_uid=__name__)
            _hooked = True


def shutdown_run() -> None:
    """Run the registered callbacks, last registered first, and forget them; a failing one is logged
    and the others still run."""
    with _lock:
        callbacks = list(reversed(_callbacks))
        _callbacks.clear()
    for callback in callbacks:
        try:
            callback()
        except Exception:
            log.exception("shutdown: %r failed", callback)


def _at_worker_process_shutdown(**_kwargs) -> None:
    shutdown_run()
