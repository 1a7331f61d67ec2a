"""One worker at a time on a row, across every process and host: a database claim.

A claim is a conditional UPDATE on the row's `runner` column that succeeds only when nobody holds
it, or when the holder has gone silent for `stale_after` seconds, or when the holder is a process
on this host that no longer exists (a worker child killed mid-task, whose task Celery redelivers
at once). The holder proves it is alive with `heartbeat`, which fails once the claim was taken over,
so a runner that was presumed dead stops instead of working next to its successor.

A claim is a lease, not data: outside a transaction its writes (claim, takeover, release) commit
without waiting for the WAL flush, as the trace's do. A crash of the database may forget the last
of them, which ends every runner's connection anyway: a forgotten claim leaves the row free, a
forgotten release leaves it to go stale. Parking a fire (harness.quality) releases and claims its
session and fire once more, so these commits are on the harness's path."""

import os
import socket
import threading
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from fathom.transient import connections_reset

_HOST = socket.gethostname()


class ClaimLost(Exception):
    """The row was taken over by another runner; the current one must stop."""


def runner_id() -> str:
    return f"{_HOST}:{os.getpid()}:{threading.get_ident()}"


def claim(model, pk, *, stale_after: int) -> bool:
    """Claim row `pk` of `model` (a `Claimable`) for this thread; False when someone else holds it."""
    me, now = runner_id(), timezone.now()
    _given_back().discard((model._meta.label, model._meta.pk.to_python(pk)))  # a new claim, to release again
    if _lease_write(model, pk, runner=me, at=now, where=_FREE, params=[now - timedelta(seconds=stale_after)]):
        return True
    holder = model.objects.filter(pk=pk).values_list("runner", flat=True).first()
    if holder and holder != me and _is_dead_here(holder):
        return _lease_write(model, pk, runner=me, at=now, where="runner = %s", params=[holder])
    return False


def is_live(runner: str, heartbeat_at, *, stale_after: int) -> bool:
    """Whether a row's holder still counts as working on it (the claim's rule, for sweeps)."""
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
    _given_back().add((model._meta.label, model._meta.pk.to_python(pk)))


def release(model, pk) -> bool:
    """Give the claim back; a claim already taken over is left to its new holder. Called on the way
    out of a transient error too: a connection that error broke is replaced first, so the retried
    task (on any worker) finds the row free rather than held by a runner that stopped."""
    given = _given_back()
    key = (model._meta.label, model._meta.pk.to_python(pk))
    if key in given:
        given.discard(key)
        return True
    connections_reset()
    return _lease_write(model, pk, runner="", at=None, where="runner = %s", params=[runner_id()])


def _lease_write(model, pk, *, runner: str, at, where: str, params: list) -> bool:
    """UPDATE the row's claim columns where `where` holds; whether it did. Outside a transaction, in
    one query string with `SET LOCAL synchronous_commit TO OFF` (one implicit transaction, whose
    commit does not wait for the WAL flush); inside one, as a plain statement of that transaction."""
    update = _lease_sql(model, where=where)
    alone = not connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL synchronous_commit TO OFF; {update}" if alone else update,
                       [runner, at, pk, *params])
        if alone:
            cursor.nextset()  # past the SET's result, to the UPDATE's
        return cursor.fetchone() is not None


_FREE = "(runner = '' OR runner_heartbeat_at IS NULL OR runner_heartbeat_at < %s)"  # nobody holds it, or silent


def _lease_sql(model, *, where: str) -> str:
    table, key = connection.ops.quote_name(model._meta.db_table), connection.ops.quote_name(model._meta.pk.column)
    return f"UPDATE {table} SET runner = %s, runner_heartbeat_at = %s WHERE {key} = %s AND {where} RETURNING 1"


_local = threading.local()


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
