"""Transient errors: the failures that trying again fixes (a dropped or refused database connection, a
deadlock, a broker or Redis that blinked). One list for the whole project:

- every Celery task retries them, declared on the task: `@shared_task(..., **retries())`, with a
  bounded exponential backoff and jitter (extra errors of the task's own, e.g. a provider outage,
  go in as arguments: `**retries(EmbeddingUnavailable, max_retries=8)`);
- code that records failures (a fire, a session's turn, a tool's result) lets them through instead,
  so the task retries and the work resumes from what it committed;
- `connections_reset()` drops the database connections such an error broke, so the code that
  cleans up after it (releasing a claim, writing the trace) runs on a new one.

Never a blanket `Exception`: an error that trying again cannot fix must fail the work once, visibly."""

import psycopg
import redis.exceptions
from django.db import InterfaceError, OperationalError, connections
from kombu.exceptions import OperationalError as BrokerError

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    OperationalError,  # Django's: connection lost or refused, deadlock, serialization failure, ...
    InterfaceError,  # Django's: the connection was already closed under us
    psycopg.OperationalError,  # raised outside Django's wrapper (a pool that timed out, raw psycopg)
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    BrokerError,  # kombu: the broker could not be reached to publish
)

# Exponential: 2 s, 4 s, 8 s, ... up to RETRY_BACKOFF_MAX_SECONDS, each drawn at random below that
# (Celery's full jitter), so workers that failed together do not come back together.
RETRY_BACKOFF_SECONDS = 2
RETRY_BACKOFF_MAX_SECONDS = 120
RETRY_MAX = 6


def retries(*also: type[Exception], max_retries: int = RETRY_MAX) -> dict:
    """A task's retry options: the transient errors (and `also`) retried with backoff and jitter, at
    most `max_retries` times; then the task fails with the last error."""
    return {"autoretry_for": (*TRANSIENT_ERRORS, *also), "retry_backoff": RETRY_BACKOFF_SECONDS,
            "retry_backoff_max": RETRY_BACKOFF_MAX_SECONDS, "retry_jitter": True, "max_retries": max_retries}


def connections_reset() -> None:
    """Close this thread's database connections that an error left unusable, outside a transaction
    (inside one, its owner rolls back first); the next query opens a new connection."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is None or connection.in_atomic_block or not connection.errors_occurred:
            continue
        if not connection.is_usable():
            connection.close()
        connection.errors_occurred = False
