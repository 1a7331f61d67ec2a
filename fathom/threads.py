"""The database from an event loop (the SSE streams, the dashboard's live updates, the MCP server,
Festinger's proxy): Django's ORM is synchronous, so each read or write runs on a worker thread, which
gives its connection back to the pool when the call ends."""

from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.db import close_old_connections


def in_thread(function, *, executor: ThreadPoolExecutor | None = None):
    """`function` as a coroutine function run on a thread of `executor` (the event loop's default when
    None; not one shared thread: calls run at once)."""
    return sync_to_async(_closing_connections(function), thread_sensitive=False, executor=executor)


def _closing_connections(function):
    # Runs on a thread that no request ends: give its connection back to the pool here.
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        finally:
            close_old_connections()

    return call
