"""Who is looking and at which workspace. A dashboard user is a Django user; the workspaces they see
are those of their memberships, and the current one is kept in their session. Every view wears
`dashboard_view`: a logged-out user goes to login, a user without a workspace to onboarding, and a
row of another workspace (NotFoundError from the apps' selectors) is the dashboard's 404 page."""

import functools
from dataclasses import dataclass

from django.contrib.auth.views import redirect_to_login
from django.shortcuts import redirect, render
from django.urls import reverse

from dashboard.filters import FilterError
from fathom.auth import role_allows
from fathom.errors import ApplicationError, NotFoundError
from fathom.models import Membership, Role, Workspace
from fathom.selectors import memberships_of

SESSION_KEY = "dashboard_workspace_id"


@dataclass(frozen=True)
class Current:
    """The request's user in the current workspace."""

    workspace: Workspace
    role: str
    memberships: list[Membership]

    @property
    def may_operate(self) -> bool:
        """Owners and operators decide proposals and override conflicts; viewers only read."""
        return role_allows(self.role, Role.OPERATOR)


def current_get(request) -> Current | None:
    """The user's current workspace (the one chosen in this session, else their first), or None when
    they belong to none."""
    memberships = list(memberships_of(user=request.user))
    if not memberships:
        return None
    chosen = request.session.get(SESSION_KEY)
    membership = next((m for m in memberships if m.workspace_id == chosen), memberships[0])
    return Current(workspace=membership.workspace, role=membership.role, memberships=memberships)


def current_switch(request, *, slug: str) -> Workspace:
    """Make the user's workspace `slug` the current one; NotFoundError when they are no member of it."""
    membership = next((m for m in memberships_of(user=request.user) if m.workspace.slug == slug), None)
    if membership is None:
        raise NotFoundError(f"no workspace {slug!r} of yours")
    request.session[SESSION_KEY] = membership.workspace_id
    return membership.workspace


def current_set(request, *, workspace: Workspace) -> None:
    request.session[SESSION_KEY] = workspace.pk


def dashboard_view(view=None, *, operate: bool = False, needs_workspace: bool = True):
    """Wrap a dashboard view: login required, `request.dashboard` set to the Current (or None for views
    that need no workspace), NotFoundError rendered as the 404 page, a list's FilterError as a 400 page,
    any other ApplicationError as the error page with its status, and with `operate` a viewer's request
    refused (403)."""

    def decorate(function):
        @functools.wraps(function)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path(), reverse("dashboard:login"))
            request.dashboard = current_get(request)
            if request.dashboard is None and needs_workspace:
                return redirect("dashboard:onboarding")
            if operate and not (request.dashboard and request.dashboard.may_operate):
                return render(request, "dashboard/error.html", {"title": "Not allowed", "message":
                              "Your role in this workspace only reads; an owner or operator decides."}, status=403)
            try:
                return function(request, *args, **kwargs)
            except NotFoundError as exc:
                return render(request, "dashboard/error.html", {"title": "Not found", "message": exc.message},
                              status=404)
            except FilterError as exc:
                return render(request, "dashboard/error.html", {"title": "Bad filter", "message": exc.message,
                                                                "back": request.path}, status=400)
            except ApplicationError as exc:  # any other refusal (an id prefix two deltas share): its page, not a 500
                return render(request, "dashboard/error.html", {"title": "Not possible", "message": exc.message},
                              status=exc.status_code)

        return wrapped

    return decorate(view) if view is not None else decorate
