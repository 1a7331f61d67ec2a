"""A web request's database connection, from its process's pool (settings: FATHOM_DB_POOL_*).

A request takes its connection at its first query (in the view: authentication reads the key) and
holds it until Django closes the response, so only that first query can find the pool exhausted:
after FATHOM_DB_POOL_TIMEOUT it is answered 503 with Retry-After, having written nothing. A streamed
response (the SSE event stream) gives its connection back as soon as the stream starts, since a
stream lasts minutes and reads through connections of its own."""

import logging
import math

from django.conf import settings
from django.db import OperationalError, connection
from django.http import JsonResponse
from psycopg_pool import PoolTimeout

from fathom.api.errors import error_body

logger = logging.getLogger(__name__)


class DatabaseConnectionMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.streaming and not connection.in_atomic_block:  # (a test's transaction stays open)
            connection.close()
        return response

    def process_exception(self, request, exception):
        return database_busy_response() if pool_exhausted(exception) else None


def pool_exhausted(exc: BaseException) -> bool:
    """Whether `exc` is Django's error for a connection the pool could not lend within its timeout."""
    return isinstance(exc, OperationalError) and isinstance(exc.__cause__, PoolTimeout)


def database_busy_response() -> JsonResponse:
    retry_after = math.ceil(settings.FATHOM_DB_POOL_TIMEOUT)
    logger.warning("no database connection free within %s s (FATHOM_DB_POOL_MAX_SIZE=%s): answered 503",
                   settings.FATHOM_DB_POOL_TIMEOUT, settings.FATHOM_DB_POOL_MAX_SIZE)
    response = JsonResponse(error_body("database_busy", f"every database connection is in use; try again in "
                                       f"{retry_after} s", {"retry_after_seconds": retry_after}), status=503)
    response["Retry-After"] = str(retry_after)
    return response
