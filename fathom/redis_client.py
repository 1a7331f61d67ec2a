"""The one Redis connection pool of a process (shared fast state; Celery keeps its own)."""

from functools import cache

import redis
from django.conf import settings

from fathom.embedded import ensure_started


@cache
def get_redis() -> redis.Redis:
    if settings.EMBEDDED_REDIS:
        ensure_started(settings.DATA_DIR, postgres=False, redis=True)
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5, decode_responses=True)
