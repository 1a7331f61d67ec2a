"""GET /v1/deltas/{id}/why: the fire behind a card, with its turns, tool calls, trace and citations;
scoped to the workspace."""

from harness.fires.models import Fire
from harness.runtime.services import message_send
from lake.services import delta_create
from tests.harness.support import session_tick


def test_the_why_of_a_card_is_its_fire_with_turns_calls_and_citations(scripted_llm, api, session):
    moment = delta_create(workspace=session.workspace, content="the rover crossed the dune")
    message_send(session=session, content="what did the rover do?")
    scripted_llm.call_tool("view_full", {"delta_id": moment.id}, id="v")
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {
        "body": "it crossed the dune", "cited_ids": [moment.id], "dropped_ids": ["ffffffffffffffff"]}}])
    scripted_llm.call_tool("skip")
    session_tick(session_id=session.pk)
    fire = Fire.objects.get(session=session)
    body = api.get(f"/v1/deltas/{fire.writes['card']}/why").json()
    assert body["fire"]["id"] == str(fire.pk) and body["delta_id"] == fire.writes["card"]
    assert [t["number"] for t in body["fire"]["turns"]] == [1, 2, 3]
    assert body["fire"]["turns"][0]["calls"][0]["name"] == "view_full" and body["fire"]["trace"]
    assert [(c["id"], c["verb"], c["found"]) for c in body["citations"]] == [
        (moment.id, "cited", True), ("ffffffffffffffff", "dropped", False)]
    assert body["citations"][0]["content"] == "the rover crossed the dune"
    # the attestation-free fire's other writes answer too; a moment no fire wrote does not
    assert api.get(f"/v1/deltas/{fire.writes['affirms'][0]}/why").json()["fire"]["id"] == str(fire.pk)
    assert api.get(f"/v1/deltas/{moment.id}/why").status_code == 404


def test_the_why_is_scoped_to_the_workspace(scripted_llm, api_client_for, session, other_workspace):
    message_send(session=session, content="hello")
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "hi"}}]).call_tool("skip")
    session_tick(session_id=session.pk)
    card = Fire.objects.get(session=session).writes["card"]
    assert api_client_for(other_workspace, "viewer").get(f"/v1/deltas/{card}/why").status_code == 404
    assert api_client_for(session.workspace, "viewer").get(f"/v1/deltas/{card}/why").status_code == 200
    assert api_client_for(session.workspace, "viewer").get("/v1/deltas/zz/why").status_code in (400, 404)
