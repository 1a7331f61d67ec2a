"""The one cron validator: every schedule an operator writes (a routine, the resolution job) goes
through it; its error names the field that is wrong."""

import pytest

from fathom.cron import cron_parse
from fathom.errors import ApplicationError


@pytest.mark.parametrize(("expression", "message"), [
    ("* * * *", "must have 5 fields .* it has 4"),
    ("61 * * * *", "the minute field '61' is not valid .* 0-59"),
    ("0 24 * * *", "the hour field '24' is not valid .* 0-23"),
    ("0 mon * * *", "the hour field 'mon' is not valid"),
    ("0 0 0 * *", "the day-of-month field '0' is not valid .* 1-31"),
    ("0 0 * 13 *", "the month-of-year field '13' is not valid"),
    ("0 0 * * funday", "the day-of-week field 'funday' is not valid"),
    ("0 0 * * 1;rm", "the day-of-week field '1;rm' is not valid"),
])
def test_a_bad_cron_expression_is_refused_saying_which_field(expression, message):
    with pytest.raises(ApplicationError, match=message):
        cron_parse(expression)


@pytest.mark.parametrize(("expression", "parsed"), [
    ("*/15 9-17 * * mon-fri", "*/15 9-17 * * mon-fri"),
    ("@hourly", "0 * * * *"),
    ("  0 0 1 jan *  ", "0 0 1 jan *"),
])
def test_good_cron_expressions_parse(expression, parsed):
    assert str(cron_parse(expression)) == parsed
