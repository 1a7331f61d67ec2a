"""The fires in the operator's admin: a session with its turns and messages, its fire with the journal
inline (turns and every tool call's whole result); cancelling fires."""

from harness.fires.models import Fire
from harness.fires.services import fire_create, fire_run
from harness.runtime.services import message_send
from tests.harness.support import session_tick


def test_a_session_shows_its_turns_and_messages_and_its_fire_shows_the_journal(admin_client, scripted_llm, session):
    # given a session whose message was answered by a fire that called a tool
    message_send(session=session, content="plan the rover trip")
    scripted_llm.call_tool("plan", {"question": "rover trip", "steps": ["route", "supplies"]}, id="p1")
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "route first"}}])
    scripted_llm.call_tool("skip", {"reason": "nothing to name"})
    assert session_tick(session_id=session.pk) == "ended"
    fire = Fire.objects.get(session=session)

    sessions = admin_client.get("/admin/runtime/session/").content.decode()
    assert str(session.pk) in sessions and session.tag in sessions
    page = admin_client.get(f"/admin/runtime/session/{session.pk}/change/").content.decode()
    assert "plan the rover trip" in page and "ended" in page  # the message and its turn, inline

    fires = admin_client.get("/admin/fires/fire/", {"status": "finished"}).content.decode()
    assert str(fire.pk) in fires and "responded" in fires
    page = admin_client.get(f"/admin/fires/fire/{fire.pk}/change/").content.decode()
    assert "route first" in page and "p1" in page and "supplies" in page  # turns and tool calls inline
    assert "skip" in page and "nothing to name" in page  # the review pass too
    assert admin_client.get("/admin/fires/fire/add/").status_code == 403


def test_the_cancel_action_cancels_a_fire_not_started(admin_client, workspace):
    fire = fire_create(workspace=workspace, mode="introspective", question="later")
    response = admin_client.post("/admin/fires/fire/", {"action": "cancel", "_selected_action": [str(fire.pk)]})
    assert response.status_code == 302
    fire.refresh_from_db()
    assert (fire.status, fire.stop_reason) == ("cancelled", "cancelled")
    assert fire_run(fire_id=fire.pk).status == "cancelled"
