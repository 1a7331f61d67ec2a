"""The runtime app's REST endpoints, mounted under /v1/."""

from django.urls import path

from harness.runtime import api, api_tasks, schedules_api

urlpatterns = [
    path("sessions", api.SessionListCreateView.as_view(), name="sessions"),
    path("sessions/<str:session_id>", api.SessionDetailView.as_view(), name="session"),
    path("sessions/<str:session_id>/messages", api.SessionMessagesView.as_view(), name="session-messages"),
    path("sessions/<str:session_id>/refresh-profile", api.SessionRefreshProfileView.as_view(),
         name="session-refresh-profile"),
    path("sessions/<str:session_id>/events", api.SessionEventsView.as_view(), name="session-events"),
    path("sessions/<str:session_id>/schedules", schedules_api.SessionSchedulesView.as_view(), name="session-schedules"),
    path("schedules/<str:schedule_id>", schedules_api.ScheduleDetailView.as_view(), name="schedule"),
    path("profiles/agents", api.AgentProfileListCreateView.as_view(), name="agent-profiles"),
    path("profiles/agents/<slug:slug>", api.AgentProfileDetailView.as_view(), name="agent-profile"),
    path("profiles/users", api.UserProfileListCreateView.as_view(), name="user-profiles"),
    path("profiles/users/<slug:slug>", api.UserProfileDetailView.as_view(), name="user-profile"),
    path("sessions/<str:session_id>/tasks", api_tasks.SessionTasksView.as_view(), name="session-tasks"),
    path("tasks/<str:task_id>", api_tasks.TaskDetailView.as_view(), name="task"),
    path("tasks/<str:task_id>/cancel", api_tasks.TaskCancelView.as_view(), name="task-cancel"),
    path("profiles/agents/<slug:slug>/history", api_tasks.AgentProfileHistoryView.as_view(), name="agent-profile-history"),
    path("profiles/users/<slug:slug>/history", api_tasks.UserProfileHistoryView.as_view(), name="user-profile-history"),
]
