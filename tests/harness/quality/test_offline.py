"""The quality harness with no model configured (the offline model answers every role): each class of
question the classifier knows ends passed on its first attempt, having searched for the question."""

import pytest

from harness.fires.models import Fire, FireToolCall
from harness.quality.contracts import HEALING_MARKER
from harness.quality.models import QualityRun
from harness.runtime.services import message_send, session_create
from lake.services import delta_create
from tests.harness.quality.conftest import verify_all
from tests.harness.support import session_tick

QUESTIONS = {
    "chat": "What do we know about the zephyrine rover?",
    "synthesis": "Compare the themes across all my notes about the zephyrine rover and the lake",
    "recommendation": "What should we do next about the zephyrine rover?",
    "drafting": "Draft a memo about the zephyrine rover for the team",
}


@pytest.mark.parametrize("workflow", list(QUESTIONS))
def test_the_offline_model_passes_every_class_first_time(workflow, workspace, quality_on):
    # given a lake with a few notes, and no model configured for any role
    delta_create(workspace=workspace, content="The zephyrine rover crossed the dunes in March, slower than planned.")
    delta_create(workspace=workspace, content="The zephyrine lake froze over in April; the rover waited on its shore.")
    delta_create(workspace=workspace, content="The zephyrine rover's wheels need new bearings before the summer.")
    session = session_create(workspace=workspace)
    question = QUESTIONS[workflow]
    message_send(session=session, content=question)
    # when the session ticks until the fire ends (the verifiers run as the quality worker would)
    outcome = session_tick(session_id=session.pk)
    while outcome == "parked":
        verify_all(QualityRun.objects.get(fire__session=session))
        outcome = session_tick(session_id=session.pk)
    # then the question was classified as its class, answered once, and passed
    fire = Fire.objects.get(session=session)
    run = QualityRun.objects.get(fire=fire)
    assert run.complexity["workflow_type"] == workflow
    first = run.attempts.get(number=1)
    assert first.contract["passed"], first.contract["issues"]
    assert (run.state, run.degraded, run.final_attempt, run.attempts.count()) == ("done", {}, 1, 1)
    assert first.verifier["passed"] and first.decision["retry"] is False
    # it searched the lake for the question, never for a note of the harness
    searches = list(FireToolCall.objects.filter(fire=fire, name="semantic").values_list("arguments", flat=True))
    assert searches and all(args["query"] == question for args in searches)
    assert HEALING_MARKER not in fire.response["body"] and "[harness]" not in fire.response["body"]
