"""Contracts fit answers written the way a capable model writes them (scripted, through a session
message with the harness on): the synthesis minimum counts the sources the answer used, never the
agent's own earlier cards the search also returned; citations are checked wherever the answer makes
them, the ids in its text too; the verifiers read the cited passages."""

from harness.fires.models import Fire
from harness.quality import agents, verification
from harness.quality.models import QualityRun
from harness.quality.services import quality_settings_update
from harness.runtime.services import message_send
from lake.services import delta_create
from tests.harness.quality.conftest import classification, respond, verdict
from tests.harness.support import session_tick

NOTES = ("The kestrel survey counted 41 nesting pairs along the north ridge in May.",
         "Kestrel nests on the south slope failed after the April storms flooded the burrows.",
         "Volunteers ringed 19 kestrel chicks at the quarry, twice as many as last year.",
         "The kestrel feeding study found voles made up most of the prey brought to the nests.")


def lake_with_an_earlier_answer(workspace):
    """Four notes, and an earlier fire's insight card about them (the agent's own write), which a
    search for kestrels returns too."""
    notes = [delta_create(workspace=workspace, content=text) for text in NOTES]
    delta_create(workspace=workspace, content="Kestrels did well this year on the ridge and at the quarry.",
                 source="harness", tags=["kind:insight"])
    return notes


def asked(session, roles, answer: dict, *, score: float = 0.85):
    """The synthesis question asked, answered with `answer` after a search, verified (`score`), in a
    workspace that gives synthesis one attempt: the fire's run, ended."""
    quality_settings_update(workspace_id=session.workspace_id, retry_policies={"synthesis": {"max_attempts": 1}})
    message_send(session=session, content="Synthesise what the kestrel notes say about this year's breeding")
    roles.classifier.reply(classification("MEDIUM", "synthesis", require_citations=True))
    roles.main.call_tool("semantic", {"query": "kestrel breeding this year"})
    roles.main.reply(tool_calls=[answer])
    roles.verifier.reply(verdict(score))
    roles.main.call_tool("skip", {"reason": "-"})
    assert session_tick(session_id=session.pk) == "ended"
    return QualityRun.objects.get(fire__session=session)


def test_a_good_synthesis_passes_first_time(roles, session, workspace):
    # given four notes and an earlier insight of the agent's own, all five returned by the search
    ridge, south, quarry, _ = lake_with_an_earlier_answer(workspace)
    # when the model answers as a capable one does: three insights, each quoting the note it rests on,
    # the same ids cited inline in its prose (it left the fourth note out, and its own earlier card)
    cards = [{"kind": "insight", "title": "Ridge pairs held up",
              "body": "The north ridge kept a healthy colony: 41 pairs nested there in May.",
              "citations": [{"id": ridge.pk, "quote": "counted 41 nesting pairs along the north ridge"}]},
             {"kind": "insight", "title": "The south slope was lost to the storms",
              "body": "Flooding in April wiped out the south-slope nests.",
              "citations": [{"id": south.pk, "quote": "failed after the April storms flooded the burrows"}]},
             {"kind": "insight", "title": "More chicks at the quarry",
              "body": "Ringing at the quarry doubled on last year.",
              "citations": [{"id": quarry.pk, "quote": "twice as many as last year"}]}]
    body = (f"## This year's kestrel breeding\n\nA mixed year. The north ridge held 41 pairs [{ridge.pk}], and "
            f"the quarry produced twice as many ringed chicks as last year [{quarry.pk[:8]}], but the April "
            f"storms flooded the south-slope burrows and those nests failed [{south.pk}].")
    run = asked(session, roles, respond(body, cards=cards))
    # then its contract asks one insight per source it used (three), not per hit (five), and passes
    first = run.attempts.get(number=1)
    assert first.contract["passed"], first.contract["issues"]
    assert first.contract["contract"]["min_insights"] == 3
    assert sorted(first.contract["citations"]["sources_used"]) == sorted([ridge.pk, south.pk, quarry.pk])
    # and the verifier read each cited passage beside the answer
    verifier_prompt = roles.verifier.sent[0].messages[-1].content
    assert all(note in verifier_prompt for note in NOTES[:3]) and NOTES[3] not in verifier_prompt
    assert (run.final_attempt, run.degraded, run.attempts.count()) == (1, {}, 1)


def test_a_thin_synthesis_does_not_pass(roles, session, workspace):
    # given the same lake
    ridge, south, quarry, _ = lake_with_an_earlier_answer(workspace)
    # when the model cites three notes inline but sums them up in a single insight
    body = (f"Breeding was mixed this year: good on the ridge [{ridge.pk}] and at the quarry [{quarry.pk}], "
            f"poor on the south slope [{south.pk}].")
    card = {"kind": "insight", "body": "A mixed year.", "citations": [{"id": ridge.pk}]}
    run = asked(session, roles, respond(body, cards=[card]))
    # then its contract fails on the insights it owes the sources it used
    assert run.attempts.get(number=1).contract["issues"] == ["Insufficient insights: 1 created (minimum 3)"]


def test_an_id_in_the_answers_text_is_checked_like_any_citation(roles, session, workspace):
    # given the same lake, and an answer citing a real note and, inline, an id no tool returned
    ridge, *_ = lake_with_an_earlier_answer(workspace)
    card = {"kind": "insight", "body": "The ridge held 41 pairs.",
            "citations": [{"id": ridge.pk, "quote": "41 nesting pairs"}]}
    body = f"The ridge held 41 pairs [{ridge.pk}], and the colony is the largest in the county [deadbeefdeadbeef]."
    run = asked(session, roles, respond(body, cards=[card]))
    # then the inline id is an unfounded citation, and the verifier's passages say so too
    attempt = run.attempts.get(number=1)
    assert attempt.contract["issues"] == ["Unfounded citation [deadbeefdeadbeef]: no such delta in this workspace"]
    brief = verification.verifier_brief(Fire.objects.get(session=session), attempt.response)
    assert brief["passages"] == [{"id": ridge.pk, "passage": NOTES[0]},
                                 {"id": "deadbeefdeadbeef", "passage": "(no such delta in this workspace)"}]
    assert agents.BRIEF_CHARS == 13_500
