"""The runtime in the operator's admin: profiles and their history, thresholds, background tasks."""

from harness.runtime import background
from harness.runtime.models import HarnessSettings, ProfileFieldVersion, Task
from harness.runtime.profiles import agent_profile_create, profile_update, user_profile_create
from harness.runtime.services import session_create


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
