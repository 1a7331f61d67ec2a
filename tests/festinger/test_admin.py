"""Festinger in Django admin, through the Django test client."""

import time

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from fathom.models import Membership
from festinger.models import Conflict, Edge, EdgeHistory, ResolutionRun, WorldConfig
from festinger.schedules import resolution_task_name
from festinger.services import insert_fact, world_ensure
from tests.festinger.conftest import isa_isa_conflict

OVERVIEW = reverse("admin:festinger_overview")


@pytest.fixture
def queued(workspace):
    return isa_isa_conflict(workspace)


def staff(client, workspace, role):
    user = User.objects.create_user(username=f"staff-{role}", password="pw", is_staff=True)
    Membership.objects.create(user=user, workspace=workspace, role=role)
    client.force_login(user)
    return client


def test_the_festinger_page_shows_pending_count_last_run_and_runs_now(admin_client, workspace, queued,
                                                                      django_capture_on_commit_callbacks):
    html = admin_client.get(OVERVIEW).content.decode()
    assert f'data-workspace="{workspace.slug}"' in html and "Run resolution now" in html and "never" in html

    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client.post(reverse("admin:festinger_run", args=[workspace.pk]))
    assert response.status_code == 302 and len(callbacks) == 1
    run = ResolutionRun.objects.get(workspace=workspace)
    assert run.status == "queued" and run.trigger == "operator:user:admin"

    page = admin_client.get(OVERVIEW)
    row = next(r for r in page.context["rows"] if r["workspace"] == workspace)
    assert row["pending"] == 1 and row["last_run"] == run
    assert f"#{run.pk} queued" in page.content.decode()


def test_a_viewer_sees_the_page_but_cannot_run(client, workspace, other_workspace, queued):
    viewer = staff(client, workspace, "viewer")
    page = viewer.get(OVERVIEW)
    assert [r["workspace"] for r in page.context["rows"]] == [workspace]
    assert "Run resolution now" not in page.content.decode()
    assert viewer.post(reverse("admin:festinger_run", args=[workspace.pk])).status_code == 403
    assert not ResolutionRun.objects.exists()


def test_conflict_actions_accept_and_keep(admin_client, workspace, queued):
    insert_fact(workspace=workspace, concept="dobby", parent="agent_pool", dimension="membership",
                is_isa=False, confidence=0.9, source="cloud_llm")
    ispart = insert_fact(workspace=workspace, concept="dobby", parent="worker_pool", dimension="membership",
                         is_isa=False, confidence=0.7, source="inferred")
    changelist = reverse("admin:festinger_conflict_changelist")
    assert admin_client.get(changelist).status_code == 200

    admin_client.post(changelist, {"action": "accept_incoming", "_selected_action": [ispart.pk]})
    admin_client.post(changelist, {"action": "keep_existing", "_selected_action": [queued.pk]})

    assert Conflict.objects.get(pk=ispart.pk).status == "resolved"
    assert Conflict.objects.get(pk=ispart.pk).resolved_by == "operator:user:admin"
    assert Conflict.objects.get(pk=queued.pk).status == "dismissed"
    assert list(Edge.objects.filter(concept__token="dobby").values_list("parent__token", flat=True)) == ["worker_pool"]
    assert EdgeHistory.objects.get().parent.token == "agent_pool"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_ask_the_resolver_action_queues_the_conflict_for_a_worker(admin_client, workspace, queued, scripted_llm,
                                                                   celery_worker, monkeypatch):
    scripted_llm.reply('{"decision": "dismiss", "reasoning": "noise"}')
    asked_here = []  # this process serves the request; the worker is another process, not patched
    monkeypatch.setattr("festinger.resolution.complete", lambda **kwargs: asked_here.append(kwargs))

    response = admin_client.post(reverse("admin:festinger_conflict_changelist"),
                                 {"action": "ask_resolver", "_selected_action": [queued.pk]}, follow=True)

    assert asked_here == []
    assert "Queued 1 conflict(s) for the resolver model; skipped 0." in response.content.decode()
    deadline = time.monotonic() + 30
    while Conflict.objects.get(pk=queued.pk).status == "pending" and time.monotonic() < deadline:
        time.sleep(0.2)
    conflict = Conflict.objects.get(pk=queued.pk)
    assert (conflict.status, conflict.resolved_by) == ("dismissed", "festinger")
    assert [request.role for request in scripted_llm.sent] == ["resolver"]


def test_a_viewer_cannot_decide_conflicts(client, workspace, queued, django_capture_on_commit_callbacks):
    viewer = staff(client, workspace, "viewer")
    User.objects.get(username="staff-viewer").user_permissions.set(
        Permission.objects.filter(content_type__app_label="festinger"))
    response = viewer.post(reverse("admin:festinger_conflict_changelist"),
                           {"action": "keep_existing", "_selected_action": [queued.pk]})
    assert response.status_code == 302
    with django_capture_on_commit_callbacks() as callbacks:
        asked = viewer.post(reverse("admin:festinger_conflict_changelist"),
                            {"action": "ask_resolver", "_selected_action": [queued.pk]}, follow=True)
    assert callbacks == [] and "Queued 0 conflict(s) for the resolver model; skipped 1." in asked.content.decode()
    assert Conflict.objects.get(pk=queued.pk).status == "pending"


def test_deleting_an_edge_in_admin_keeps_it_in_history(admin_client, workspace):
    edge = insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                       confidence=0.9, source="cloud_llm")
    admin_client.post(reverse("admin:festinger_edge_delete", args=[edge.pk]), {"post": "yes"})
    assert not Edge.objects.filter(pk=edge.pk).exists()
    history = EdgeHistory.objects.get()
    assert (history.action, history.parent.token, history.actor) == ("removed", "repo", "operator:user:admin")


def test_editing_the_configuration_in_admin_moves_the_schedule(admin_client, workspace):
    from django_celery_beat.models import PeriodicTask

    config = world_ensure(workspace=workspace)
    url = reverse("admin:festinger_worldconfig_change", args=[config.pk])
    form = {"saliency_read_threshold": 0.4, "saliency_write_threshold": 2.0, "recollection_confidence_floor": 0.5,
            "recollection_recency_days": 30, "recollection_max_concepts": 10, "resolution_schedule": "30 3 * * *",
            "resolution_enabled": "on", "writer_role": "writer", "resolver_role": "resolver", "writer_max_calls": 2,
            "writer_calls_per_conversation": 4, "writer_calls_per_hour": 40, "saliency_half_life_days": 30}

    bad = admin_client.post(url, {**form, "resolution_schedule": "nightly"})
    assert bad.status_code == 200 and "resolution_schedule: schedule" in bad.content.decode()
    assert "must have 5 fields" in bad.content.decode()
    response = admin_client.post(url, form)

    assert response.status_code == 302, response.content.decode()[:2000]
    config = WorldConfig.objects.get(pk=config.pk)
    assert (config.saliency_read_threshold, config.resolution_schedule) == (0.4, "30 3 * * *")
    crontab = PeriodicTask.objects.get(name=resolution_task_name(workspace_id=workspace.pk)).crontab
    assert (crontab.minute, crontab.hour) == ("30", "3")


@pytest.mark.parametrize("name", ["concept", "edge", "conflict", "edgehistory", "resolutionrun", "worldconfig"])
def test_every_changelist_renders(admin_client, workspace, queued, name):
    assert admin_client.get(reverse(f"admin:festinger_{name}_changelist")).status_code == 200


def test_an_operator_decomposes_from_the_conflict_page(admin_client, workspace, queued):
    page = admin_client.get(reverse("admin:festinger_conflict_change", args=[queued.pk])).content.decode()
    assert 'id="decide-form"' in page and 'form="decide-form"' in page and 'value="decompose"' in page

    response = admin_client.post(reverse("admin:festinger_conflict_decide", args=[queued.pk]), {
        "decision": "decompose", "existing_dimension": "artifact-type", "new_dimension": "deployment-type",
        "reasoning": "both true"})

    assert response.status_code == 302
    conflict = Conflict.objects.get(pk=queued.pk)
    assert conflict.status == "resolved" and conflict.resolved_by == "operator:user:admin"
    assert sorted(Edge.objects.filter(concept__token="gnommoweb").values_list("parent__token", "dimension__token")) == [
        ("container", "deployment-type"), ("repo", "artifact-type")]
    page = admin_client.get(reverse("admin:festinger_conflict_change", args=[queued.pk])).content.decode()
    assert 'id="decide-form"' not in page


def test_a_decision_that_does_not_apply_is_reported_and_changes_nothing(admin_client, workspace, queued):
    response = admin_client.post(reverse("admin:festinger_conflict_decide", args=[queued.pk]),
                                 {"decision": "decompose", "existing_dimension": "artifact-type"}, follow=True)
    assert "needs &#x27;new_dimension&#x27;" in response.content.decode()
    assert Conflict.objects.get(pk=queued.pk).status == "pending"


def test_edges_are_read_only_in_admin(admin_client, workspace):
    edge = insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                       confidence=0.9, source="cloud_llm")
    url = reverse("admin:festinger_edge_change", args=[edge.pk])
    assert admin_client.get(url).status_code == 200
    admin_client.post(url, {"confidence": 0.1})
    edge.refresh_from_db()
    assert edge.confidence == 0.9
