"""Query parameters a view reads by hand (where no input serializer fits, as in a stream's
`Last-Event-ID`, a write's `Idempotency-Key`): a bad value is a 400 with the JSON error envelope,
never a 500."""

from rest_framework import serializers

from fathom.errors import ApplicationError

MAX_IDEMPOTENCY_KEY_LENGTH = 255


def int_param(raw, name: str, default: int) -> int:
    """`raw` as an integer, `default` when it is missing or empty; ApplicationError naming `name`
    when it is not an integer."""
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise ApplicationError(f"{name} must be an integer") from None


def idempotency_key_clean(key: str) -> str:
    """A write's idempotency key as given (REST's Idempotency-Key header, MCP's argument), at most
    MAX_IDEMPOTENCY_KEY_LENGTH characters: a longer one is refused, never cut into another's."""
    key = key.strip()
    if len(key) > MAX_IDEMPOTENCY_KEY_LENGTH:
        raise serializers.ValidationError({"Idempotency-Key": [f"at most {MAX_IDEMPOTENCY_KEY_LENGTH} characters"]})
    return key
