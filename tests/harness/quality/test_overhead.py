"""What the quality harness costs a fire in database statements: a SIMPLE chat question's fire with
the harness on against the same fire with it off (the verifier's tasks, on the quality worker,
counted apart). The bench (tests/bench/bench_quality.py) times the same fire."""

from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from harness.quality import flow
from harness.quality.models import QualityRun
from tests.harness.quality.conftest import Roles
from tests.harness.quality.test_flow import simple_chat_asked
from tests.harness.support import session_tick

pytestmark = pytest.mark.django_db(transaction=True)  # as in production: BEGIN and COMMIT are counted

# The harness's statements per SIMPLE chat fire: its pre-flight (the run and its first attempt, the
# classifier's prompt and call, harness_complexity), the contract and the verifier's dispatch, the
# fire's second run once the verdict is in (the session's tick again, the decision, the profile,
# the context metrics, the three events of acceptance written at once). 63 (and 14 on the quality
# worker) before the events of a step were written at once and settings, the run and its attempt
# read once.
HARNESS_STATEMENTS = 35
VERIFIER_STATEMENTS = 11  # the verifier's task and the chord's join, on the quality worker


def _fire_statements(workspace, roles, *, quality: bool) -> tuple[list[str], list[str]]:
    session = simple_chat_asked(workspace, roles, quality=quality)
    fire_statements, verifier_statements = [], []
    with CaptureQueriesContext(connection) as ticks:
        outcome = session_tick(session_id=session.pk)
    fire_statements += [q["sql"] for q in ticks.captured_queries]
    if quality:
        assert outcome == "parked"
        run = QualityRun.objects.get(fire__session=session)
        with CaptureQueriesContext(connection) as verifier:
            flow.verification_run(run_id=run.pk, attempt=1, perspective="standard")
            assert flow.verification_join(run_id=run.pk, attempt=1, token=run.waiting_token)
        verifier_statements = [q["sql"] for q in verifier.captured_queries]
        with CaptureQueriesContext(connection) as ticks:
            outcome = session_tick(session_id=session.pk)
        fire_statements += [q["sql"] for q in ticks.captured_queries]
    assert outcome == "ended"
    return fire_statements, verifier_statements


def test_the_harness_adds_a_fixed_few_statements_to_a_simple_chat_fire(workspace, other_workspace, settings):
    settings.FATHOM_MODEL_MIDDLEWARE = []
    counted = {}
    for quality, place in ((True, workspace), (False, other_workspace)):
        switch = flow.quality_settings_get(workspace_id=place.pk)
        switch.enabled = quality
        switch.save(update_fields=["enabled"])
        roles = Roles(place)
        try:
            _fire_statements(place, roles, quality=quality)  # first use: settings and policy rows made
            counted[quality] = _fire_statements(place, roles, quality=quality)
        finally:
            roles.reset()
    (with_harness, verifier), (without, _) = counted[True], counted[False]
    extra = Counter(s[:60] for s in with_harness) - Counter(s[:60] for s in without)
    assert len(with_harness) - len(without) == HARNESS_STATEMENTS, sorted(extra.elements())
    assert len(verifier) == VERIFIER_STATEMENTS, verifier
