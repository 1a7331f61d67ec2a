"""Staff who are not superusers see, in every workspace-scoped admin, only their workspaces' rows."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from fathom.llm.models import LLMModel
from fathom.llm.services import model_create
from fathom.models import Membership
from harness.runtime.services import session_create
from lake.services import delta_create


@pytest.fixture
def member_client(client, workspace):
    user = get_user_model().objects.create_user("member", password="x", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    Membership.objects.create(user=user, workspace=workspace, role="operator")
    client.force_login(user)
    return client


@pytest.mark.parametrize(("url", "field"), [
    ("/admin/lake/delta/", "content"),
    ("/admin/runtime/session/", "title"),
])
def test_a_member_sees_only_their_workspaces_rows(member_client, workspace, other_workspace, url, field):
    if "delta" in url:
        delta_create(workspace=workspace, content="ours-row")
        delta_create(workspace=other_workspace, content="theirs-row")
    else:
        session_create(workspace=workspace, title="ours-row")
        session_create(workspace=other_workspace, title="theirs-row")

    page = member_client.get(url, {"q": "row"} if field == "content" else {})

    assert page.status_code == 200
    assert "ours-row" in page.content.decode() and "theirs-row" not in page.content.decode()


def test_a_member_cannot_open_another_workspaces_row(member_client, other_workspace):
    theirs = delta_create(workspace=other_workspace, content="theirs-row")
    page = member_client.get(f"/admin/lake/delta/{theirs.pk}/change/")
    assert page.status_code == 302  # Django's admin: an object you may not see "does not exist"


@pytest.fixture
def model_operator(client, workspace):
    user = get_user_model().objects.create_user("model-operator", password="x", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="fathom",
                                                        content_type__model__in=["llmmodel", "modelassignment"]))
    Membership.objects.create(user=user, workspace=workspace, role="operator")
    client.force_login(user)
    return client


def test_an_operator_sees_and_assigns_only_their_workspaces_models(model_operator, workspace, other_workspace):
    model_create(workspace=workspace, name="ours-model", provider="offline", model="offline")
    theirs = model_create(workspace=other_workspace, name="theirs-model", provider="offline", model="offline")
    deployment = model_create(workspace=None, name="deployment-model", provider="offline", model="offline")

    listing = model_operator.get("/admin/fathom/llmmodel/").content.decode()
    adding = model_operator.get("/admin/fathom/modelassignment/add/").content.decode()

    assert "ours-model" in listing and "theirs-model" not in listing and "deployment-model" not in listing
    assert model_operator.get(f"/admin/fathom/llmmodel/{theirs.pk}/change/").status_code == 302
    assert model_operator.get(f"/admin/fathom/llmmodel/{deployment.pk}/change/").status_code == 302
    assert "ours-model" in adding and "theirs-model" not in adding and other_workspace.slug not in adding
    form = model_operator.get("/admin/fathom/llmmodel/add/").content.decode()
    assert "uses_deployment_key" not in form and "shared_with" not in form


def test_an_operators_model_in_admin_keeps_to_the_base_url_allow_list(model_operator, workspace, settings):
    settings.FATHOM_MODEL_ALLOW_LOOPBACK = False
    form = {"workspace": workspace.pk, "name": "leaky", "provider": "openai", "model": "gpt-4o-mini",
            "api": "chat_completions", "base_url": "http://127.0.0.1:9/v1", "input_price_per_mtok": "0",
            "output_price_per_mtok": "0", "context_window": "128000", "max_output_tokens": "4096",
            "timeout_seconds": "60", "options": "{}", "assignments-TOTAL_FORMS": "0", "assignments-INITIAL_FORMS": "0"}

    page = model_operator.post("/admin/fathom/llmmodel/add/", form)

    assert page.status_code == 200 and "FATHOM_MODEL_ALLOW_LOOPBACK" in page.content.decode()
    assert not LLMModel.objects.filter(name="leaky").exists()
