"""The operator's admin: sessions with their turns and messages, fires with their journal inline
(turns and every tool call's whole result), profiles, thresholds; cancelling fires."""

from harness.fires.models import Fire
from harness.fires.services import fire_create, fire_run
from harness.runtime import background
from harness.runtime.models import HarnessSettings, ProfileFieldVersion, Task
from harness.runtime.profiles import agent_profile_create, profile_update, user_profile_create
from harness.runtime.services import message_send, session_create
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


def test_profiles_and_thresholds_are_edited_in_admin(admin_client, workspace):
    agent = agent_profile_create(workspace=workspace, slug="ada", soul_md="curious")
    user = user_profile_create(workspace=workspace, slug="myra", user_md="likes rivers")
    assert "ada" in admin_client.get("/admin/runtime/agentprofile/").content.decode()
    assert "likes rivers" in admin_client.get(f"/admin/runtime/userprofile/{user.pk}/change/").content.decode()
    page = admin_client.get(f"/admin/runtime/agentprofile/{agent.pk}/change/").content.decode()
    assert "curious" in page and 'name="soul_md"' in page
    limits = HarnessSettings.objects.create(workspace=workspace)
    response = admin_client.post(f"/admin/runtime/harnesssettings/{limits.pk}/change/", {
        "workspace": workspace.pk, "max_turns_per_fire": 4, "sit_round_cap": 3, "refire_cap": 2,
        "refire_delay_seconds": 1, "stale_after_seconds": 120, "history_messages": 10,
        "task_capacity_workspace": 6, "task_capacity_session": 2, "task_timeout_seconds": 90, "task_max_attempts": 3,
        "stream_batch_ms": 50})
    assert response.status_code == 302, response.content.decode()[:2000]
    limits.refresh_from_db()
    assert (limits.max_turns_per_fire, limits.sit_round_cap) == (4, 3)
    assert (limits.task_capacity_workspace, limits.task_capacity_session, limits.task_timeout_seconds) == (6, 2, 90)


def test_admin_lists_tasks_cancels_them_and_shows_profile_history(admin_client, workspace, monkeypatch):
    monkeypatch.setattr(background, "_dispatch", lambda task: None)
    session = session_create(workspace=workspace)
    task = background.task_create(session=session, tool="fs_list", arguments={"path": "fs://"}, idempotency_key="a")
    page = admin_client.get("/admin/runtime/task/").content.decode()
    assert str(task.pk) in page and "fs_list" in page
    assert "fs_list" in admin_client.get(f"/admin/runtime/session/{session.pk}/change/").content.decode()
    response = admin_client.post("/admin/runtime/task/", {"action": "cancel", "_selected_action": [str(task.pk)]})
    assert response.status_code == 302
    assert Task.objects.get(pk=task.pk).state == "canceled"
    profile = agent_profile_create(workspace=workspace, slug="scout", memory="before")
    profile_update(profile=profile, memory="after")
    assert "before" in admin_client.get("/admin/runtime/profilefieldversion/?q=before").content.decode()


def test_an_admin_edit_of_a_profile_bumps_its_version_and_keeps_the_value_it_replaced(admin_client, workspace):
    agent = agent_profile_create(workspace=workspace, slug="ada", soul_md="curious", memory="rivers")
    response = admin_client.post(f"/admin/runtime/agentprofile/{agent.pk}/change/", {
        "workspace": workspace.pk, "slug": "ada", "name": "", "agents_md": "", "soul_md": "bold", "identity_md": "",
        "memory": "rivers"})
    assert response.status_code == 302, response.content.decode()[:2000]
    agent.refresh_from_db()
    assert (agent.soul_md, agent.version) == ("bold", 2)
    kept = ProfileFieldVersion.objects.get(agent_profile=agent)
    assert (kept.field, kept.version, kept.content) == ("soul_md", 1, "curious")
    assert kept.replaced_by.startswith("operator:user:")
