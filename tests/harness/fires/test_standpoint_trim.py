"""Standpoint trim: a multi-domain synthesis question's prompt leaves out the long-term memory and
the orient (the committed lists the model would paraphrase); other questions keep them."""

import pytest

from harness.fires.models import Fire
from harness.fires.prompt import is_synthesis, system_message
from harness.fires.services import fire_create
from harness.runtime.profiles import agent_profile_default
from lake.services import delta_create


@pytest.mark.parametrize(("question", "synthesis"), [
    ("compare the rover and the lake", True), ("What connections between tides and moods?", True),
    ("how does sleep relate to mood?", True), ("rivers vs lakes", True),
    ("what did the rover do?", False), ("tell me about the contrasting", False),
])
def test_which_questions_are_synthesis(question, synthesis):
    assert is_synthesis(question) is synthesis


def test_a_synthesis_question_is_answered_without_the_committed_lists(workspace):
    profile = agent_profile_default(workspace=workspace)
    profile.memory, profile.identity_md = "I committed to: tides, rovers, moods.", "I am Fathom."
    profile.save()
    delta_create(workspace=workspace, content="the operator is into tides", tags=["kind:orient"])
    plain = system_message(fire_create(workspace=workspace, mode=Fire.Mode.INTROSPECTIVE, question="what is a tide?"))
    synthesis = system_message(fire_create(workspace=workspace, mode=Fire.Mode.INTROSPECTIVE,
                                           question="compare tides and rovers"))
    assert "I committed to" in plain and "I am Fathom." in plain and "the operator is into tides" in plain
    assert "I committed to" not in synthesis and "I am Fathom." in synthesis
    assert "the operator is into tides" not in synthesis
    assert "Standpoint (trimmed: a synthesis question)" in synthesis
