"""What the quality harness costs a fire in database statements: a SIMPLE chat question's fire with
the harness on against the same fire with it off (the verifier's tasks, on the quality worker,
counted apart). The bench (tests/bench/bench_quality.py) times the same fire."""

from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from harness.fires.services import fire_parked_resume
from harness.quality import configuration, verification
from harness.quality.models import QualityRun
from harness.runtime.services import session_create
from tests.harness.quality.conftest import Roles, simple_chat_asked
from tests.harness.support import session_tick

pytestmark = pytest.mark.django_db(transaction=True)  # as in production: BEGIN and COMMIT are counted

# The harness's statements per SIMPLE chat fire: in its first run, the classifier's call traced (the ids
# of its run and first attempt and its retry policy are read with its quality settings; the run, the
# attempt and harness_complexity are written in one statement, the answer's contract and the verifier's
# wait in another, the fire's claims given back with it), the answer saved apart (the fire saves it, the
# harness's hook then records its checks); on its way back (fire_parked_resume), the session's settings
# and claim, the fire read and claimed, its trace's earlier runs, its QualityRun with the current attempt
# (the run's retry policy kept in it), the tool results' sizes and the profile's figures (each a plain
# read of its own), and the decision's one statement. The verifier's send is not recorded in the outbox
# unless the broker refuses it (a lost one is sent again by the resend sweep: fathom.outbox, `swept`). 63 (and 14 on the quality worker) before the events of a step
# were written at once and settings, the run and its attempt read once; 5 when the way back was one
# hand-joined read of six tables (the fire's lifecycle hooks read what they need themselves).
HARNESS_STATEMENTS = 13
# the lone verifier's task: what it reads besides its message, its call traced, and its verdict (the fire's
# resume, like the verifier's send, is recorded only if the broker refuses it)
VERIFIER_STATEMENTS = 4


def _fire_statements(workspace, roles, *, quality: bool) -> tuple[list[str], list[str]]:
    session = session_create(workspace=workspace)
    simple_chat_asked(session, roles, quality=quality)
    fire_statements, verifier_statements = [], []
    with CaptureQueriesContext(connection) as ticks:
        outcome = session_tick(session_id=session.pk)
    fire_statements += [q["sql"] for q in ticks.captured_queries]
    if quality:
        assert outcome == "parked"
        run = QualityRun.objects.get(fire__session=session)
        brief = verification.verifier_brief(run.fire, run.attempts.get(number=1).response)  # what the task's message carries
        with CaptureQueriesContext(connection) as verifier:
            assert verification.verification_alone(run_id=run.pk, attempt=1, token=run.waiting_token, brief=brief)
        verifier_statements = [q["sql"] for q in verifier.captured_queries]
        with CaptureQueriesContext(connection) as ticks:  # what the verifier's task sends back
            outcome = fire_parked_resume(session_id=session.pk, workspace_id=workspace.pk, fire_id=run.fire_id)
        fire_statements += [q["sql"] for q in ticks.captured_queries]
    assert outcome == "ended"
    return fire_statements, verifier_statements


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
    (with_harness, verifier), (without, _) = counted[True], counted[False]
    extra = Counter(s[:60] for s in with_harness) - Counter(s[:60] for s in without)
    assert len(with_harness) - len(without) == HARNESS_STATEMENTS, "\n".join(sorted(extra.elements()))
    assert len(verifier) == VERIFIER_STATEMENTS, verifier
