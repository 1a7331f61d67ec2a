from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model

from fathom.auth import KeyPrincipal, may_operate, operator_actor, request_actor, workspaces_operated_by
from fathom.models import Membership
from fathom.services import apikey_create, apikey_revoke


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Token abc", "Bearer fth_nothere_secret", "Bearer not-a-fathom-key", "Bearer a b"],
    ids=["missing", "empty", "wrong-scheme", "unknown", "malformed", "spaces"],
)
def test_it_answers_401_with_an_error_body_without_a_valid_key(client, db, header):
    headers = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.get("/v1/workspace", **headers)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert set(response.json()["error"]) == {"code", "message", "details"}


def test_a_revoked_key_is_refused(client, workspace):
    issued = apikey_create(workspace=workspace, role="owner")
    assert client.get("/v1/workspace", HTTP_AUTHORIZATION=f"Bearer {issued.secret}").status_code == 200
    apikey_revoke(key=issued.key)
    assert client.get("/v1/workspace", HTTP_AUTHORIZATION=f"Bearer {issued.secret}").status_code == 401


def test_a_wrong_secret_with_a_real_prefix_is_refused(client, workspace):
    issued = apikey_create(workspace=workspace, role="owner")
    forged = issued.secret[:-4] + "AAAA"
    assert client.get("/v1/workspace", HTTP_AUTHORIZATION=f"Bearer {forged}").status_code == 401


def test_a_viewer_reads_but_cannot_write(workspace, api_client_for):
    viewer = api_client_for(workspace, "viewer")
    assert viewer.get("/v1/workspace").json()["role"] == "viewer"
    response = viewer.post("/v1/apikeys", {"role": "viewer"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


def test_only_owners_issue_keys_and_the_secret_is_shown_once(workspace, api_client_for):
    assert api_client_for(workspace, "operator").post("/v1/apikeys", {"role": "viewer"}).status_code == 403
    owner = api_client_for(workspace, "owner")
    created = owner.post("/v1/apikeys", {"role": "viewer", "name": "ci"}, format="json")
    assert created.status_code == 201
    secret = created.json()["secret"]
    assert secret.startswith("fth_")
    listing = owner.get("/v1/apikeys").json()
    assert secret not in str(listing)
    assert created.json()["prefix"] in {row["prefix"] for row in listing["results"]}


def test_a_validation_error_names_the_field(workspace, api_client_for):
    response = api_client_for(workspace, "owner").post("/v1/apikeys", {"role": "emperor"}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert error["message"].startswith("role:")
    assert "role" in error["details"]


def test_the_key_is_stored_hashed(workspace):
    issued = apikey_create(workspace=workspace, role="viewer")
    issued.key.refresh_from_db()
    assert issued.secret not in (issued.key.hashed_secret, issued.key.prefix)
    assert len(issued.key.hashed_secret) == 64


def test_the_last_used_time_is_recorded(client, workspace):
    issued = apikey_create(workspace=workspace, role="viewer")
    client.get("/v1/workspace", HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    issued.key.refresh_from_db()
    assert issued.key.last_used_at is not None


@pytest.mark.parametrize(("role", "may"), [("owner", True), ("operator", True), ("viewer", False)])
def test_only_owners_and_operators_operate_in_their_workspace(workspace, other_workspace, role, may):
    user = get_user_model().objects.create_user(f"a-{role}", is_staff=True)
    Membership.objects.create(user=user, workspace=workspace, role=role)
    assert may_operate(user, workspace_id=workspace.pk) is may
    assert may_operate(user, workspace_id=other_workspace.pk) is False
    assert list(workspaces_operated_by(user)) == ([workspace] if may else [])


def test_a_superuser_operates_everywhere(workspace, other_workspace):
    user = get_user_model().objects.create_superuser("root", password="x")
    assert may_operate(user, workspace_id=other_workspace.pk)
    assert set(workspaces_operated_by(user)) == {workspace, other_workspace}


def test_the_operator_actor_is_spelled_one_way_for_a_key_and_an_admin_user(workspace):
    issued = apikey_create(workspace=workspace, role="operator")
    by_key = SimpleNamespace(user=KeyPrincipal(issued.key))
    by_admin = SimpleNamespace(user=get_user_model()(username="ops@example.com"))
    assert request_actor(by_key) == f"operator:apikey:{issued.key.prefix}"
    assert request_actor(by_admin) == "operator:user:ops@example.com"
    assert operator_actor(kind="login", name="alice") == "operator:login:alice"
