"""The ceiling on model calls per trace: a fire, with everything it starts in any process (child
fires, tools' calls, Festinger's writes, the judge), makes at most FATHOM_LLM_MAX_CALLS_PER_TRACE
model calls in all and FATHOM_LLM_MAX_CALLS_PER_ROLE per role. `complete` and `stream` spend one
before each call; the call past a ceiling is not made: it fails with `LLMBudgetExceeded`
(budget_exceeded), which the trace records on its llm.call span.

The count lives in Redis, one hash per trace id (a field per role and one for the total), because
the trace id is what every process of a trace shares (it travels in context variables and Celery
headers) and Redis counts atomically across them, in one round trip, before the call: counting
TraceEvents instead would miss the calls other processes have buffered and not written yet. A
refused call counts nothing, so one role at its ceiling does not use up the others'. The hash
expires a day after the trace's last call.

Without Redis the call goes on uncounted (logged): the ceiling is a safety net against runaway
loops, not an access control, and a blip of Redis must not fail model calls."""

import logging

from django.conf import settings
from redis.exceptions import RedisError

from fathom.llm.errors import LLMBudgetExceeded
from fathom.redis_client import get_redis

logger = logging.getLogger(__name__)

KEY = "fathom:llm:calls:{trace_id}"
TOTAL = "*"
EXPIRE_SECONDS = 24 * 3600

# KEYS[1] the trace's hash; ARGV: role, total ceiling, role ceiling (0: none), expiry.
# Returns {0, scope, calls} when refused, {1, total, role calls} when counted.
_SPEND = """
local total = tonumber(redis.call('HGET', KEYS[1], '*') or '0')
local role = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local total_max, role_max = tonumber(ARGV[2]), tonumber(ARGV[3])
if total_max > 0 and total >= total_max then return {0, 'trace', total} end
if role_max > 0 and role >= role_max then return {0, 'role', role} end
redis.call('HINCRBY', KEYS[1], '*', 1)
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('EXPIRE', KEYS[1], ARGV[4])
return {1, total + 1, role + 1}
"""


def budget_spend(*, trace_id: str, role: str, provider: str = "", model: str = "") -> None:
    """Count one model call of `role` in the trace, or raise LLMBudgetExceeded (counting nothing)
    when the trace has made its total or the role its share."""
    total_max = settings.FATHOM_LLM_MAX_CALLS_PER_TRACE
    role_max = settings.FATHOM_LLM_MAX_CALLS_PER_ROLE.get(role, 0)
    if not total_max and not role_max:
        return
    try:
        allowed, scope, calls = get_redis().eval(_SPEND, 1, KEY.format(trace_id=trace_id), role, total_max,
                                                 role_max, EXPIRE_SECONDS)
    except RedisError:
        logger.warning("model call budget of trace %s not checked: Redis is unreachable", trace_id, exc_info=True)
        return
    if allowed:
        return
    if scope == "trace":
        message = (f"this trace has made {calls} model calls, the most "
                   f"FATHOM_LLM_MAX_CALLS_PER_TRACE allows; the {role} call was not made")
        limit = total_max
    else:
        message = (f"this trace has made {calls} {role} model calls, the most "
                   f"FATHOM_LLM_MAX_CALLS_PER_ROLE allows {role}; the call was not made")
        limit = role_max
    raise LLMBudgetExceeded(message, trace_id=trace_id, role=role, scope=scope, limit=limit,
                            provider=provider, model=model, attempts=0)


def budget_used(*, trace_id: str) -> dict[str, int]:
    """The calls counted so far in the trace: {"*": total, role: calls, ...}."""
    return {field: int(n) for field, n in get_redis().hgetall(KEY.format(trace_id=trace_id)).items()}
