"""The dashboard's pages, mounted at the site's root (`/`)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard import pages, runs, views

app_name = "dashboard"

urlpatterns = [
    path("", views.feed, name="feed"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="dashboard:login"), name="logout"),
    path("onboarding/", views.onboarding, name="onboarding"),
    path("workspace/switch", views.workspace_switch, name="workspace-switch"),
    path("ask", views.ask, name="ask"),
    path("feed/stream", views.feed_stream, name="feed-stream"),
    path("fires/<str:fire_id>/card", views.fire_card, name="fire-card"),
    path("fires/<str:fire_id>/feedback", views.fire_feedback, name="fire-feedback"),
    path("fires/<str:fire_id>/why", views.why_view, name="why"),
    path("loop/<str:fire_id>", views.loop_view, name="loop"),
    path("proposals/<int:proposal_id>", views.proposal_view, name="proposal"),
    path("proposals/<int:proposal_id>/<str:action>", views.proposal_decide, name="proposal-decide"),
    path("lake/", views.lake_view, name="lake"),
    path("lake/<str:delta_id>", views.delta_view, name="delta"),
    path("panels/<str:name>", views.side_panel_view, name="panel"),
    path("autonomy/", views.autonomy_view, name="autonomy"),
    path("autonomy/mode", views.autonomy_mode, name="autonomy-mode"),
    path("inbox/<str:delta_id>/<str:action>", views.inbox_mark_view, name="inbox-mark"),
    path("runs/", runs.runs_view, name="runs"),
    path("runs/<str:run_id>", runs.run_view, name="run"),
    path("runs/<str:run_id>/cancel", views.conductor_run_cancel, name="run-cancel"),
    path("tasks/<str:task_id>/cancel", views.task_cancel, name="task-cancel"),
    path("conflicts/<int:conflict_id>/override", views.conflict_override, name="conflict-override"),
    path("festinger/conversations/<path:session>", views.conversation_view, name="conversation"),
    # The list pages of their own (dashboard/pages.py)
    path("proposals/", pages.proposals_page, name="proposals"),
    path("festinger/", pages.festinger_page, name="festinger"),
]
