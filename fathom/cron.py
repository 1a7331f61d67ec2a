"""Cron expressions, validated one way for every schedule an operator writes (routines, the
resolution job): five fields or an @alias, each checked by celery's own crontab parser, and an
error that says which field is wrong and what it may hold."""

import re
from dataclasses import dataclass

from celery.schedules import crontab_parser

from fathom.errors import ApplicationError


@dataclass(frozen=True)
class Cron:
    minute: str
    hour: str
    day_of_month: str
    month_of_year: str
    day_of_week: str

    def __str__(self):
        return f"{self.minute} {self.hour} {self.day_of_month} {self.month_of_year} {self.day_of_week}"


def cron_parse(expression: str) -> Cron:
    """A five-field cron expression (or @hourly, @daily, ...), or ApplicationError saying which
    field is wrong and what it may hold."""
    text = _ALIASES.get(expression.strip().lower(), expression.strip())
    parts = text.split()
    if len(parts) != 5:
        raise ApplicationError(
            f"schedule {expression!r} must have 5 fields (minute hour day-of-month month day-of-week), "
            f"or be one of {', '.join(sorted(_ALIASES))}; it has {len(parts)}",
            code="invalid_schedule",
        )
    for (field, max_, min_, named), part in zip(_FIELDS, parts, strict=True):
        label = field.replace("_", "-")
        allowed = _NAMED if named else _NUMERIC
        try:
            if not allowed.match(part):
                raise ValueError("unexpected characters")
            crontab_parser(max_, min_).parse(part)
        except ValueError as exc:
            raise ApplicationError(
                f"schedule {expression!r}: the {label} field {part!r} is not valid ({exc}); it takes "
                f"{min_}-{max_ - 1 + min_}, '*', ranges a-b, lists a,b and steps */n",
                code="invalid_schedule",
            ) from None
    return Cron(*parts)


_ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
# (field, celery's max_ (exclusive), min_, names allowed)
_FIELDS = (
    ("minute", 60, 0, False),
    ("hour", 24, 0, False),
    ("day_of_month", 31, 1, False),
    ("month_of_year", 12, 1, True),
    ("day_of_week", 7, 0, True),
)
_NUMERIC = re.compile(r"^[0-9*,/\-]+$")
_NAMED = re.compile(r"^[0-9a-zA-Z*,/\-]+$")
