"""What the quality harness costs a fire in database statements: a SIMPLE chat question's fire with
the harness on (its lone verifier called in the fire's own run) against the same fire with it off.
The bench (tests/bench/bench_quality.py) times the same fire."""

from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from harness.quality import configuration
from harness.runtime.services import session_create
from tests.harness.quality.conftest import Roles, simple_chat_asked
from tests.harness.support import session_tick

pytestmark = pytest.mark.django_db(transaction=True)  # as in production: BEGIN and COMMIT are counted

# The harness's statements per SIMPLE chat fire, all in its one run: the ids of its run and first
# attempt and its retry policy read with its quality settings, the classifier's call traced, the run,
# the attempt and harness_complexity written in one statement; the answer's contract and the verifier's
# wait in another (in the transaction that saves the answer); the verifier's prompt and calibration read,
# its call traced, its verdict recorded; then the tool results' sizes and the profile's figures read, and
# the decision's one statement, in the transaction of the fire's writes. 63 (and 14 on the quality
# worker) before the events of a step were written at once and settings, the run and its attempt read
# once; 13 (and 4) when the fire parked for its lone verifier and came back by a hand-joined read.
HARNESS_STATEMENTS = 10


def _fire_statements(workspace, roles, *, quality: bool) -> list[str]:
    session = session_create(workspace=workspace)
    simple_chat_asked(session, roles, quality=quality)
    with CaptureQueriesContext(connection) as ticks:
        assert session_tick(session_id=session.pk) == "ended"
    return [q["sql"] for q in ticks.captured_queries]


def test_the_harness_adds_a_fixed_few_statements_to_a_simple_chat_fire(workspace, other_workspace, settings):
    settings.FATHOM_MODEL_MIDDLEWARE = []
    counted = {}
    for quality, place in ((True, workspace), (False, other_workspace)):
        switch = configuration.quality_settings_get(workspace_id=place.pk)
        switch.enabled = quality
        switch.save(update_fields=["enabled"])
        roles = Roles(place)
        try:
            _fire_statements(place, roles, quality=quality)  # first use: settings and policy rows made
            counted[quality] = _fire_statements(place, roles, quality=quality)
        finally:
            roles.reset()
    with_harness, without = counted[True], counted[False]
    extra = Counter(s[:60] for s in with_harness) - Counter(s[:60] for s in without)
    assert len(with_harness) - len(without) == HARNESS_STATEMENTS, "\n".join(sorted(extra.elements()))
