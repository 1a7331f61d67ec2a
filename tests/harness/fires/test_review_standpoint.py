"""Standpoint and mood every fire: what the answer left out, the review pass's (same) call supplies."""

from harness.fires.models import Fire
from harness.runtime.services import message_send
from lake.models import Delta
from tests.harness.support import fire_write_kinds, session_tick

MOOD = {"direction": "+", "axis": "curiosity", "magnitude": 0.1, "reason": "tides"}


def answer(scripted_llm, session, respond_args, review_args):
    message_send(session=session, content="what about the tides?")
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "they turn", **respond_args}}])
    scripted_llm.call_tool("skip", {"reason": "nothing to name", **review_args})
    session_tick(session_id=session.pk)
    return Fire.objects.get(session=session)


def test_the_review_supplies_the_attestation_and_mood_the_answer_left_out(scripted_llm, session):
    fire = answer(scripted_llm, session, {}, {"attestation": "I notice I like tides.", "mood_shift": MOOD})
    assert fire.model_calls == 2  # the review's one call, no extra one
    assert "none given: supply one" in scripted_llm.sent[1].messages[-1].content
    kinds = fire_write_kinds(fire)
    assert kinds["kind:standpoint-attestation"] == 1 and kinds["kind:mood-shift"] == 1
    attestation = Delta.objects.get(pk=fire.writes["attestation"])
    assert attestation.content == "I notice I like tides." and "supplied-by:review" in attestation.tags
    assert Delta.objects.get(pk=fire.writes["mood_shift"]).content == "+0.1 curiosity: tides"


def test_what_the_answer_gave_is_not_written_again(scripted_llm, session):
    fire = answer(scripted_llm, session, {"attestation": "mine", "mood_shift": MOOD},
                  {"attestation": "the review's", "mood_shift": MOOD})
    kinds = fire_write_kinds(fire)
    assert kinds["kind:standpoint-attestation"] == 1 and kinds["kind:mood-shift"] == 1
    assert Delta.objects.get(pk=fire.writes["attestation"]).content == "mine"


def test_a_malformed_mood_from_the_review_is_left_unwritten(scripted_llm, session):
    fire = answer(scripted_llm, session, {"attestation": "mine"},
                  {"mood_shift": {"direction": "+", "axis": "x", "magnitude": 5}})
    assert fire.status == "finished" and "mood_shift" not in fire.writes
    assert fire_write_kinds(fire)["kind:mood-shift"] == 0


def test_offline_the_review_says_so_and_still_writes_the_standpoint_and_mood(session):
    # given no model at all (the offline provider answers every call), a question
    message_send(session=session, content="what about the tides?")

    session_tick(session_id=session.pk)

    fire = Fire.objects.get(session=session)
    assert fire.status == "finished" and fire.model_calls == 3  # search, respond, review
    assert fire.review["outcome"] == "skip" and "[offline]" in fire.review["reason"]
    kinds = fire_write_kinds(fire)
    assert kinds["kind:standpoint-attestation"] == 1 and kinds["kind:mood-shift"] == 1
    assert Delta.objects.get(pk=fire.writes["attestation"]).content.startswith("[offline]")
    assert Delta.objects.get(pk=fire.writes["mood_shift"]).content.startswith("-0.05 certainty")
