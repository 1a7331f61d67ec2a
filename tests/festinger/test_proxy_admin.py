"""The proxy's model table and the loop detector in Django admin: the pages answer, and a change made
there is used by every process from its next call on."""

from django.urls import reverse

from festinger.loops.guard import loop_events_record, loop_settings
from festinger.proxy.models import ProxyRoute
from festinger.proxy.upstreams import upstream_for


def test_the_admin_pages_of_routes_thresholds_and_events_answer(admin_client, workspace):
    loop_events_record(workspace_id=workspace.pk, session="s", events=[{"kind": "tool_cycle", "level": 1}])
    for model in ("proxyroute", "loopconfig", "loopevent"):
        assert admin_client.get(reverse(f"admin:festinger_{model}_changelist")).status_code == 200
        assert admin_client.get(reverse(f"admin:festinger_{model}_add")).status_code in (200, 403)
    assert b"tool_cycle" in admin_client.get(reverse("admin:festinger_loopevent_changelist")).content


def test_thresholds_saved_in_admin_are_used_at_once(admin_client, workspace, django_capture_on_commit_callbacks):
    assert loop_settings(workspace.pk).repeat_count == 3
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("admin:festinger_loopconfig_add"), {
            "workspace": workspace.pk, "enabled": "on", "roles": "main,proxy", "repeat_count": 5, "window": 12, "cycle_max_period": 3,
            "cycle_repeats": 3, "stream_min_chars": 12, "stream_max_chars": 400, "stream_repeats": 4,
            "temperature_boost": 0.3, "max_temperature": 1.5, "forbid_after": 2, "truncate_after": 3,
            "breaker_after": 4, "breaker_cooldown_seconds": 300})
    assert response.status_code == 302
    assert loop_settings(workspace.pk).repeat_count == 5


def test_a_route_saved_in_admin_is_used_at_once(admin_client, workspace, settings,
                                                django_capture_on_commit_callbacks):
    settings.OLLAMA_HOST = ""
    assert upstream_for(workspace_id=workspace.pk, name="house-model") is None
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("admin:festinger_proxyroute_add"), {
            "workspace": workspace.pk, "name": "house-model", "upstream": "registry", "target": "offline",
            "enabled": "on"})
    assert response.status_code == 302 and ProxyRoute.objects.filter(name="house-model").exists()
    found = upstream_for(workspace_id=workspace.pk, name="house-model")
    assert found is not None and found.kind == "registry" and found.model.provider == "offline"
