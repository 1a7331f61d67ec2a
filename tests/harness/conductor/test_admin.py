"""The operator's admin of runs: a run shows its graph as a tree (prompt -> conductor -> workers ->
tools, with the model calls per actor), its agenda, calls and decisions inline; the conductor's
settings turn the terminal on; runs can be cancelled."""

import pytest

from harness.conductor.models import ConductorSettings, Run
from harness.conductor.services import conductor_settings_get, run_create

pytestmark = pytest.mark.django_db


def test_a_run_shows_its_graph_agenda_calls_and_decisions(admin_client, workspace, driver):
    run = run_create(workspace=workspace, objective="whats tech news today")
    driver.drain()
    call = run.calls.get()
    assert str(run.pk) in admin_client.get("/admin/conductor/run/").content.decode()
    page = admin_client.get(f"/admin/conductor/run/{run.pk}/change/").content.decode()
    assert "prompt: whats tech news today" in page
    assert f"conductor <code>conductor:{run.pk}</code>: 2 model calls (1 bootstrap, 1 decision)" in page
    assert f"researcher <code>{call.call_id}</code> [finished]" in page and "tool semantic" in page
    assert f"fire:{call.fire_id} (" in page  # model calls per actor
    assert "Complete" in page and "bootstrap" in page  # the decisions inline
    assert admin_client.get("/admin/conductor/run/add/").status_code == 403


def test_the_terminal_is_turned_on_in_the_conductor_settings(admin_client, workspace):
    settings = conductor_settings_get(workspace_id=workspace.pk)
    page = admin_client.get(f"/admin/conductor/conductorsettings/{settings.pk}/change/")
    assert page.status_code == 200 and "terminal_enabled" in page.content.decode()
    form = {f.name: getattr(settings, f.attname) for f in ConductorSettings._meta.fields
            if f.name not in ("id", "created_at")}
    response = admin_client.post(f"/admin/conductor/conductorsettings/{settings.pk}/change/",
                                 {**form, "workspace": workspace.pk, "terminal_enabled": "on"})
    assert response.status_code == 302, response.content[:2000]
    assert conductor_settings_get(workspace_id=workspace.pk).terminal_enabled is True


def test_the_cancel_action_cancels_a_run(admin_client, workspace, driver):
    run = run_create(workspace=workspace, objective="news")
    response = admin_client.post("/admin/conductor/run/", {"action": "cancel", "_selected_action": [str(run.pk)]})
    assert response.status_code == 302
    assert Run.objects.get(pk=run.pk).status == "cancelled"
