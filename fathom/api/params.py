"""Query parameters a view reads by hand (where no input serializer fits, as in a stream's
`Last-Event-ID`): a bad value is a 400 with the JSON error envelope, never a 500."""

from fathom.errors import ApplicationError


def int_param(raw, name: str, default: int) -> int:
    """`raw` as an integer, `default` when it is missing or empty; ApplicationError naming `name`
    when it is not an integer."""
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise ApplicationError(f"{name} must be an integer") from None
