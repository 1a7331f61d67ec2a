"""The flush (the beat entry `maintenance.festinger_counts_flush`, every 30 s): the encounter counts every
process pushed to Redis are added to PostgreSQL with `encounter_count = encounter_count + n`, never
read-modify-write, each batch once, and the new totals are published for every process to take."""

import logging
import uuid

from django.db import connection, transaction
from redis.exceptions import LockError

from fathom.redis_client import get_redis
from fathom.schedules import interval_task_ensure
from festinger.cache import keys
from festinger.models import TOKEN_MAX_LENGTH

log = logging.getLogger(__name__)

FLUSH_TASK = "maintenance.festinger_counts_flush"
FLUSH_LOCK_SECONDS = 120

# Take what was pushed as a batch named ARGV[1] (unless a failed flush left a batch behind, which goes
# first): {batch id, token, n, token, n, ...}.
_DRAIN_SCRIPT = """
if redis.call('EXISTS', KEYS[2]) == 0 then
  if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('DEL', KEYS[3])
end
redis.call('SET', KEYS[3], ARGV[1], 'NX')
local batch = redis.call('HGETALL', KEYS[2])
table.insert(batch, 1, redis.call('GET', KEYS[3]))
return batch
"""


_UPSERT = """
INSERT INTO festinger_concept (workspace_id, token, encounter_count, last_seen, saliency, novelty, is_common,
                               created_at)
SELECT %s, t.token, t.n, now(), CASE WHEN t.n > 1 THEN ln(t.n::float8) ELSE 0 END, 0, false, now()
FROM unnest(%s::text[], %s::bigint[]) AS t(token, n)
ON CONFLICT (workspace_id, token) DO UPDATE SET
    encounter_count = festinger_concept.encounter_count + EXCLUDED.encounter_count,
    last_seen = EXCLUDED.last_seen,
    saliency = CASE
        WHEN festinger_concept.is_common AND NOT EXISTS (
            SELECT 1 FROM festinger_edge e WHERE e.concept_id = festinger_concept.id AND e.parent_id <> e.concept_id)
        THEN 0
        ELSE ln(greatest(festinger_concept.encounter_count + EXCLUDED.encounter_count, 1)::float8) END
RETURNING token, id, encounter_count, extract(epoch FROM last_seen)::float8
"""


def counts_flush() -> dict[int, int]:
    """Add every workspace's pushed counts to PostgreSQL; returns {workspace id: tokens flushed}.
    One flush at a time (a Redis lock). A batch is added once: its id is recorded in the same
    transaction (WorldConfig.counts_batch), so a flush that died after the commit and before Redis
    deleted the batch finds it added and only publishes its totals."""
    redis = get_redis()
    lock = redis.lock(keys.FLUSH_LOCK, timeout=FLUSH_LOCK_SECONDS, blocking=False)
    if not lock.acquire():
        return {}
    flushed = {}
    try:
        for member in redis.smembers(keys.COUNTING):
            workspace_id = int(member)
            names = {"ws": workspace_id}
            raw = redis.eval(_DRAIN_SCRIPT, 3, keys.COUNTS.format(**names), keys.DRAINING.format(**names),
                             keys.DRAINING_ID.format(**names), uuid.uuid4().hex)
            if not raw:
                continue
            batch_id, pairs = raw[0], raw[1:]
            batch = {token: int(n) for token, n in zip(pairs[::2], pairs[1::2], strict=True)
                     if len(token) <= TOKEN_MAX_LENGTH}
            totals = _batch_add(workspace_id, batch_id, batch) if batch else {}
            pipe = redis.pipeline()
            pipe.delete(keys.DRAINING.format(**names), keys.DRAINING_ID.format(**names), keys.TOTALS.format(**names))
            if totals:
                pipe.hset(keys.TOTALS.format(**names), mapping=totals)
            pipe.incr(keys.FLUSHED.format(**names))
            pipe.execute()
            flushed[workspace_id] = len(totals)
    finally:
        try:
            lock.release()
        except LockError:  # outlived FLUSH_LOCK_SECONDS: another flush may hold it now, and keeps it
            log.warning("festinger: the counts flush lock had expired at release")
    return flushed


def _batch_add(workspace_id: int, batch_id: str, batch: dict[str, int]) -> dict[str, str]:
    """Add the batch's counts unless it was added already; token -> "<concept id>:<count>:<last seen,
    epoch>" either way
    (nothing for a workspace without a world)."""
    tokens = sorted(batch)  # one lock order for concurrent upserts
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE festinger_worldconfig SET counts_batch = %s "
                       "WHERE workspace_id = %s AND counts_batch <> %s", [batch_id, workspace_id, batch_id])
        if cursor.rowcount:
            cursor.execute(_UPSERT, [workspace_id, tokens, [batch[t] for t in tokens]])
        else:
            cursor.execute("SELECT token, id, encounter_count, coalesce(extract(epoch FROM last_seen)::float8, 0) "
                           "FROM festinger_concept WHERE workspace_id = %s AND token = ANY(%s)", [workspace_id, tokens])
        return {token: f"{pk}:{count}:{seen}" for token, pk, count, seen in cursor.fetchall()}


def counts_flush_schedule_ensure(**models):
    return interval_task_ensure(
        task=FLUSH_TASK, every_seconds=30, **models,
        description="Every 30 s: adds the encounter counts every process pushed to Redis to Festinger's "
                    "concepts in PostgreSQL (encounter_count + n), and publishes the totals.")
