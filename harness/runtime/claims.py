"""One worker at a time on a row, across every process and host: a database claim.

A claim is a conditional UPDATE on the row's `runner` column that succeeds only when nobody holds
it, or when the holder is the caller itself (this process and thread: what it held before is over,
since a thread runs one task at a time), or when the holder has gone silent for `stale_after`
seconds, or when the holder is a process on this host that no longer exists (a worker child killed
mid-task, whose task Celery redelivers at once).

Liveness is the claim's heartbeat, `runner_heartbeat_at`: every process that holds claims runs one
heartbeat thread (started with its first claim) that refreshes the heartbeat of each of them every
HEARTBEAT_SECONDS, however long the holder waits on a model, so a claim whose heartbeat is a few
intervals old belongs to a runner that is gone (or cut off from the database). The holder itself
proves it still holds the claim with `heartbeat`, which fails once the claim was taken over, so a
runner that was presumed dead stops instead of working next to its successor.

A release that meets a database that went away waits for it (RELEASE_PATIENCE_SECONDS), then
leaves the release to the heartbeat thread, which makes it as soon as the database answers again:
the holder's retried task, on whichever worker, finds the row free rather than held by a runner
that stopped.

A claim is a lease, not data: outside a transaction its writes (claim, takeover, release) commit
without waiting for the WAL flush, as the trace's do. A crash of the database may forget the last
of them, which ends every runner's connection anyway: a forgotten claim leaves the row free, a
forgotten release leaves it to go stale. Parking a fire (harness.quality) releases and claims its
session and fire once more, so these commits are on the harness's path."""

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from fathom.shutdown import shutdown_register
from fathom.sql import statement_run
from fathom.transient import TRANSIENT_ERRORS, connections_reset

logger = logging.getLogger(__name__)

_HOST = socket.gethostname()
HEARTBEAT_SECONDS = 5  # how often a process's heartbeat thread refreshes its claims' heartbeats
RELEASE_PATIENCE_SECONDS = 30  # how long a release waits for a database that went away


class ClaimLost(Exception):
    """The row was taken over by another runner; the current one must stop."""


def runner_id() -> str:
    return f"{_HOST}:{os.getpid()}:{threading.get_ident()}"


def claim(model, pk, *, stale_after: int) -> bool:
    """Claim row `pk` of `model` (a `Claimable`) for this thread; False when someone else holds it."""
    me, now = runner_id(), timezone.now()
    key = _key(model, pk)
    _given_back().discard(key)  # a new claim, to release again
    taken = _lease_write(model, pk, runner=me, at=now, where=_FREE_OR_MINE,
                         params=[me, now - timedelta(seconds=stale_after)])
    if not taken:
        holder = model.objects.filter(pk=pk).values_list("runner", flat=True).first()
        taken = bool(holder) and _is_dead_here(holder) and _lease_write(
            model, pk, runner=me, at=now, where="runner = %s", params=[holder])
    if taken:
        _beating.hold(model, key[1], me)
    return taken


def is_live(runner: str, heartbeat_at, *, stale_after: int) -> bool:
    """Whether a row's holder still counts as working on it (the claim's rule, for sweeps): its
    heartbeat is younger than `stale_after` seconds, and it is not a process of this host that
    no longer exists."""
    if not runner or heartbeat_at is None or heartbeat_at < timezone.now() - timedelta(seconds=stale_after):
        return False
    return not _is_dead_here(runner)


def heartbeat(model, pk) -> None:
    """Record that this runner is alive and still holds the claim; raise ClaimLost if it does not."""
    if not model.objects.filter(pk=pk, runner=runner_id()).update(runner_heartbeat_at=timezone.now()):
        raise ClaimLost(f"{model.__name__} {pk} is no longer claimed by {runner_id()}")


def handed_over(model, pk) -> None:
    """The holder gave the claim back with a write of its own (a fire parking for the quality worker
    releases its fire and session with its last statement, so that what it waits for may claim them at
    once): the release() that follows has nothing left to do."""
    key = _key(model, pk)
    _given_back().add(key)
    _beating.drop(model, key[1], runner_id())


def release(model, pk, *, then: Callable[[], object] | None = None) -> bool:
    """Give the claim back; a claim already taken over is left to its new holder. Called on the way
    out of a transient error too: a connection that error broke is replaced first, and a database
    that is down is waited for (RELEASE_PATIENCE_SECONDS), then left to the heartbeat thread, which
    releases the row once the database is back and calls `then` (the holder's work passed on: its
    session ticked again), since the holder's retried task may have found the row still held; the
    error is raised, for the task to retry."""
    given = _given_back()
    key = _key(model, pk)
    me = runner_id()
    _beating.drop(model, key[1], me)
    if key in given:
        given.discard(key)
        return True
    deadline = time.monotonic() + RELEASE_PATIENCE_SECONDS
    while True:
        connections_reset()
        try:
            return _lease_write(model, pk, runner="", at=None, where="runner = %s", params=[me])
        except TRANSIENT_ERRORS:
            if connection.in_atomic_block or time.monotonic() > deadline:
                _beating.release_later(model, key[1], me, then)
                raise
            time.sleep(1)


def _lease_write(model, pk, *, runner: str, at, where: str, params: list) -> bool:
    """UPDATE the row's claim columns where `where` holds; whether it did. Its commit outside a
    transaction does not wait for the WAL flush (fathom.sql.statement_run)."""
    with connection.cursor() as cursor:
        statement_run(cursor, _lease_sql(model, where=where), [runner, at, pk, *params], durable=False)
        return cursor.fetchone() is not None


# nobody holds it, the caller holds it already, or its holder is silent
_FREE_OR_MINE = "(runner = %s OR runner = '' OR runner_heartbeat_at IS NULL OR runner_heartbeat_at < %s)"


def _lease_sql(model, *, where: str) -> str:
    table, key = connection.ops.quote_name(model._meta.db_table), connection.ops.quote_name(model._meta.pk.column)
    return f"UPDATE {table} SET runner = %s, runner_heartbeat_at = %s WHERE {key} = %s AND {where} RETURNING 1"


class _Heartbeats:
    """The claims this process holds and the releases it owes, kept by one daemon thread: every
    HEARTBEAT_SECONDS it makes the owed releases and refreshes the held claims' heartbeats (skipping
    a row its holder's transaction has locked: that holder is writing, so alive). A claim found held
    by another runner, or gone, is forgotten: its holder learns of it at its next heartbeat."""

    def __init__(self):
        self._forked()
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        # A forked worker child holds none of its parent's claims, and runs no thread yet.
        self._lock = threading.Lock()
        self._held: set[tuple] = set()
        self._owed: dict[tuple, Callable[[], object] | None] = {}  # (model, pk, runner): what follows
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def hold(self, model, pk, runner: str) -> None:
        with self._lock:
            self._owed.pop((model, pk, runner), None)
            self._held.add((model, pk, runner))
            self._thread_ensure()

    def drop(self, model, pk, runner: str) -> None:
        with self._lock:
            self._held.discard((model, pk, runner))

    def release_later(self, model, pk, runner: str, then: Callable[[], object] | None) -> None:
        with self._lock:
            self._owed[(model, pk, runner)] = then
            self._thread_ensure()

    def stop(self) -> None:
        """End the thread (before the process exits: its servers may be gone next)."""
        thread, self._thread = self._thread, None
        self._stopping.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        self._stopping = threading.Event()

    def _thread_ensure(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(self._stopping,), name="claims-heartbeat",
                                            daemon=True)
            self._thread.start()
            shutdown_register(self.stop)

    def _run(self, stopping: threading.Event) -> None:
        while not stopping.wait(HEARTBEAT_SECONDS):
            with self._lock:
                held, owed = set(self._held), dict(self._owed)
            if not held and not owed:
                continue
            try:
                self._beat(held, owed)
            except Exception:  # noqa: BLE001 - the database is away (or closed to this thread): next beat
                logger.info("claims' heartbeat failed; trying again in %s s", HEARTBEAT_SECONDS, exc_info=True)
            finally:
                connection.close()  # back to the process's pool between beats

    def _beat(self, held: set, owed: dict) -> None:
        for (model, pk, runner), then in owed.items():
            _lease_write(model, pk, runner="", at=None, where="runner = %s", params=[runner])
            with self._lock:
                self._owed.pop((model, pk, runner), None)
            if then is not None:
                then()
        models = {model for model, _, _ in held}
        for model in models:
            rows = {(pk, runner) for held_model, pk, runner in held if held_model is model}
            mine = Q()
            for pk, runner in rows:
                mine |= Q(pk=pk, runner=runner)
            with transaction.atomic():
                current = set(model.objects.filter(pk__in={pk for pk, _ in rows}).values_list("pk", "runner"))
                unlocked = model.objects.select_for_update(skip_locked=True).filter(mine).values_list("pk", flat=True)
                model.objects.filter(pk__in=list(unlocked)).update(runner_heartbeat_at=timezone.now())
            with self._lock:
                self._held -= {(model, pk, runner) for pk, runner in rows - current}


_beating = _Heartbeats()
_local = threading.local()


def _key(model, pk) -> tuple:
    return model._meta.label, model._meta.pk.to_python(pk)


def _given_back() -> set:
    if not hasattr(_local, "given_back"):
        _local.given_back = set()
    return _local.given_back


def _is_dead_here(holder: str) -> bool:
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != _HOST or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _is_zombie(int(pid))


def _is_zombie(pid: int) -> bool:
    # A killed worker child whose parent died too waits to be reaped; it runs nothing any more.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return False
