"""Staff who are not superusers see, in every workspace-scoped admin, only their workspaces' rows."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

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
