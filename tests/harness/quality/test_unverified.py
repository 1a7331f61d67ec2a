"""Nothing unverified becomes memory: a real model's answer (a local server speaking the OpenAI wire
protocol to the real SDK) that cites a missing id or misquotes its source ends degraded, is delivered
marked so over the session's events and REST, and writes nothing that asserts it; one that cites
correctly passes first time and its writes are ordinary. The classifier and the verifier are scripted."""

import pytest

from harness.fires.models import Fire
from harness.quality.models import QualityRun
from lake.models import Delta
from lake.services import delta_create
from tests.harness.quality.conftest import classification, verdict, verify_all
from tests.harness.support import session_tick

TIDE = "High tide at Port Isaac is at 6:12 on Tuesday, and the harbour dries out two hours after."
BODY = ("Your notes put Tuesday's high tide at Port Isaac at 6:12 in the morning, and they add that the harbour "
        "dries out about two hours later, so a boat should be in or out of the harbour well before nine.")
MISSING = "deadbeefdeadbeef"


def answer(delta_id: str, quote: str) -> dict:
    return {"body": BODY, "cited_ids": [delta_id],
            "cards": [{"kind": "insight", "body": f"High tide on Tuesday is at 6:12 (\"{quote}\").",
                       "citations": [{"id": delta_id, "quote": quote}]}]}


def asked_and_answered(api, session, roles, server, tide, *, answers: list[dict], verdicts: list[float],
                       review: tuple | None = None) -> Fire:
    """The question sent over REST; the model reads the note, then answers each attempt as given (and
    makes the review pass's call, if any); the session ticked as the worker does until the fire ends
    (its verifier run between ticks)."""
    sent = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "When is high tide on Tuesday?"},
                    format="json")
    assert sent.status_code == 202, sent.content
    roles.classifier.reply(classification("SIMPLE", "synthesis"))
    server.answer(tool_calls=[("view_full", {"delta_id": tide.pk})])
    for arguments in answers:
        server.answer(tool_calls=[("respond", arguments)])
    if review is not None:
        server.answer(tool_calls=[review])
    for score in verdicts:
        roles.verifier.reply(verdict(score))
    for _ in range(len(verdicts) + 1):
        if session_tick(session_id=session.pk) != "parked":
            break
        verify_all(QualityRun.objects.get(fire__session=session))
    return Fire.objects.get(session=session)


def assistant_output(api, session) -> dict:
    events = api.get(f"/v1/sessions/{session.pk}/events").json()["events"]
    (output,) = [event["data"] for event in events if event["kind"] == "AssistantOutput"]
    return output


def fire_deltas(fire) -> list[Delta]:
    return list(Delta.objects.filter(workspace_id=fire.workspace_id, tags__contains=[f"fire:{fire.pk}"]))


ASSERTING = ("kind:card", "kind:insight", "kind:recommendation", "kind:document", "kind:engagement-attest",
             "kind:qa-marker")


@pytest.mark.parametrize(("cited", "quote", "unfounded"), [
    (MISSING, "High tide at Port Isaac is at 6:12", "Unfounded citation [deadbeefdeadbeef]"),
    (None, "High tide at Port Isaac is at 7:30", "quote not found"),
], ids=["missing-id", "misquote"])
def test_an_answer_citing_what_is_not_there_ends_degraded_and_asserts_nothing(
        api, session, roles, wire_main, workspace, cited, quote, unfounded):
    # given a note in the lake, and a model that reads it, then cites a missing id (or misquotes the note)
    # every attempt, while the verifier's model would let it pass
    tide = delta_create(workspace=workspace, content=TIDE, source="notes")
    bad = answer(cited or tide.pk, quote)
    # when the question is asked and the fire runs its three attempts
    fire = asked_and_answered(api, session, roles, wire_main, tide, answers=[bad] * 3, verdicts=[0.8] * 3)
    # then the contract failed every attempt and the answer kept is degraded, with the reasons
    assert (fire.status, fire.verdict) == ("finished", "degraded")
    assert any(unfounded in reason for reason in fire.verdict_reasons)
    run = QualityRun.objects.get(fire=fire)
    assert run.state == "done" and run.attempts.count() == 3 and run.degraded["attempts_made"] == 3
    # delivered, and flagged where a client reads it: the session's AssistantOutput, GET /v1/fires/{id}
    output = assistant_output(api, session)
    assert output["body"] == BODY
    assert output["verdict"]["status"] == "degraded" and output["verdict"]["reasons"] == fire.verdict_reasons
    body = api.get(f"/v1/fires/{fire.pk}").json()
    assert body["verdict"] == {"status": "degraded", "reasons": fire.verdict_reasons}
    assert body["quality"]["degraded"]["attempts_made"] == 3
    # and nothing asserts it in the lake: no card, insight, affirmation or Q/A marker; no tag naming an id
    written = fire_deltas(fire)
    assert not [d for d in written if set(d.tags) & set(ASSERTING)]
    assert not Delta.objects.filter(workspace=workspace, tags__overlap=[
        f"cites:{i}" for i in (MISSING, tide.pk)] + [f"affirms:{i}" for i in (MISSING, tide.pk)]).exists()
    assert not Delta.objects.filter(workspace=workspace, content__contains="6:12 (").exists()
    assert body["writes"]["withheld"] == ["card", "artifacts", "affirms", "refutes", "qa_marker"]
    # no review pass consolidated it: the model was asked once to read and three times to answer
    assert len(wire_main.bodies) == 4 and fire.review == {
        "outcome": "skip", "reason": "the answer is degraded: nothing of it is consolidated"}


def test_an_answer_citing_correctly_passes_first_time_and_is_written_as_usual(
        api, session, roles, wire_main, workspace):
    # given the note, and a model that reads it and quotes it word for word
    tide = delta_create(workspace=workspace, content=TIDE, source="notes")
    good = answer(tide.pk, "High tide at Port Isaac is at 6:12 on Tuesday")
    # when the question is asked (the review pass then skips)
    fire = asked_and_answered(api, session, roles, wire_main, tide, answers=[good], verdicts=[0.9],
                              review=("skip", {"reason": "one note, nothing to name"}))
    # then it passed at its first attempt, and says so everywhere
    run = QualityRun.objects.get(fire=fire)
    assert (fire.status, fire.verdict, fire.verdict_reasons) == ("finished", "passed", [])
    assert run.attempts.count() == 1 and not run.degraded
    assert assistant_output(api, session)["verdict"] == {"status": "passed", "reasons": []}
    assert api.get(f"/v1/fires/{fire.pk}").json()["verdict"] == {"status": "passed", "reasons": []}
    # and its writes are the ordinary ones: the card, the insight citing the note, the affirmation, the marker
    kinds = sorted(t for d in fire_deltas(fire) for t in d.tags if t in ASSERTING)
    assert kinds == ["kind:card", "kind:engagement-attest", "kind:insight", "kind:qa-marker"]
    insight = next(d for d in fire_deltas(fire) if "kind:insight" in d.tags)
    assert f"cites:{tide.pk}" in insight.tags
    assert "withheld" not in fire.writes and fire.review["outcome"] == "skip"
