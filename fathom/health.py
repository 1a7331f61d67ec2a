"""What /v1/health reports: each component with `ok` and what it found."""

import time
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.utils import timezone

from fathom.celery import app
from fathom.redis_client import get_redis
from fathom.tasks import BEAT_LAST_TICK_KEY


def health_report() -> dict:
    components = {
        "database": _database(),
        "redis": _redis(),
        "workers": _workers(),
        "beat": _beat(),
    }
    return {"ok": all(c["ok"] for c in components.values()), **components}


def _database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('server_version'), "
                           "(SELECT extversion FROM pg_extension WHERE extname = 'vector')")
            server_version, pgvector_version = cursor.fetchone()
    except Exception as exc:
        return {"ok": False, "error": str(exc)}
    return {
        "ok": pgvector_version is not None,
        "engine": "postgresql",
        "server_version": server_version,
        "pgvector_version": pgvector_version,
        "embedded": settings.EMBEDDED_POSTGRES,
    }


def _redis() -> dict:
    try:
        info = get_redis().info("server")
    except Exception as exc:
        return {"ok": False, "error": str(exc)}
    return {"ok": True, "version": info.get("redis_version"), "embedded": settings.EMBEDDED_REDIS}


def _workers() -> dict:
    started = time.monotonic()
    try:
        replies = app.control.inspect(timeout=1.0).active_queues() or {}
    except Exception as exc:
        return {"ok": False, "error": str(exc), "workers": []}
    workers = [
        {"name": name, "queues": sorted(q["name"] for q in queues)} for name, queues in sorted(replies.items())
    ]
    consumed = {q for worker in workers for q in worker["queues"]}
    missing = [q for q in settings.FATHOM_QUEUES if q not in consumed]
    return {
        "ok": bool(workers) and not missing,
        "workers": workers,
        "queues_without_worker": missing,
        "ping_ms": round((time.monotonic() - started) * 1000),
    }


def _beat() -> dict:
    try:
        raw = get_redis().get(BEAT_LAST_TICK_KEY)
    except Exception as exc:
        return {"ok": False, "error": str(exc), "last_tick": None}
    if not raw:
        return {"ok": False, "last_tick": None}
    last = datetime.fromisoformat(raw)
    age = (timezone.now() - last).total_seconds()
    return {"ok": age <= settings.BEAT_STALE_AFTER_SECONDS, "last_tick": raw, "age_seconds": round(age, 1)}
