"""REST endpoints of harness, mounted under /v1/."""

from django.urls import path

from harness.autonomy import api as autonomy
from harness.autonomy.producers import api as producers
from harness.conductor import api as conductor
from harness.fires import api as fires
from harness.fires import why
from harness.quality import api as quality
from harness.runtime import api as runtime
from harness.runtime import api_tasks as tasks
from harness.runtime import schedules_api

urlpatterns = [
    path("sessions", runtime.SessionListCreateView.as_view(), name="sessions"),
    path("sessions/<str:session_id>", runtime.SessionDetailView.as_view(), name="session"),
    path("sessions/<str:session_id>/messages", runtime.SessionMessagesView.as_view(), name="session-messages"),
    path("sessions/<str:session_id>/refresh-profile", runtime.SessionRefreshProfileView.as_view(),
         name="session-refresh-profile"),
    path("sessions/<str:session_id>/events", runtime.SessionEventsView.as_view(), name="session-events"),
    path("sessions/<str:session_id>/sit", fires.SitView.as_view(), name="session-sit"),
    path("sessions/<str:session_id>/schedules", schedules_api.SessionSchedulesView.as_view(), name="session-schedules"),
    path("schedules/<str:schedule_id>", schedules_api.ScheduleDetailView.as_view(), name="schedule"),
    path("fires", fires.FireListView.as_view(), name="fires"),
    path("fires/<str:fire_id>", fires.FireDetailView.as_view(), name="fire"),
    path("fires/<str:fire_id>/cancel", fires.FireCancelView.as_view(), name="fire-cancel"),
    path("fires/<str:fire_id>/feedback", quality.FireFeedbackView.as_view(), name="fire-feedback"),
    path("introspect", fires.IntrospectView.as_view(), name="introspect"),
    path("profiles/agents", runtime.AgentProfileListCreateView.as_view(), name="agent-profiles"),
    path("profiles/agents/<slug:slug>", runtime.AgentProfileDetailView.as_view(), name="agent-profile"),
    path("profiles/users", runtime.UserProfileListCreateView.as_view(), name="user-profiles"),
    path("profiles/users/<slug:slug>", runtime.UserProfileDetailView.as_view(), name="user-profile"),
    path("sessions/<str:session_id>/tasks", tasks.SessionTasksView.as_view(), name="session-tasks"),
    path("tasks/<str:task_id>", tasks.TaskDetailView.as_view(), name="task"),
    path("tasks/<str:task_id>/cancel", tasks.TaskCancelView.as_view(), name="task-cancel"),
    path("profiles/agents/<slug:slug>/history", tasks.AgentProfileHistoryView.as_view(), name="agent-profile-history"),
    path("profiles/users/<slug:slug>/history", tasks.UserProfileHistoryView.as_view(), name="user-profile-history"),
    path("runs", conductor.RunListCreateView.as_view(), name="runs"),
    path("runs/<str:run_id>", conductor.RunDetailView.as_view(), name="run"),
    path("runs/<str:run_id>/cancel", conductor.RunCancelView.as_view(), name="run-cancel"),
    path("runs/<str:run_id>/graph", conductor.RunGraphView.as_view(), name="run-graph"),
    path("runs/<str:run_id>/events", conductor.RunEventsView.as_view(), name="run-events"),
    path("autonomy/pressure", autonomy.PressureView.as_view(), name="autonomy-pressure"),
    path("autonomy/settings", autonomy.SettingsView.as_view(), name="autonomy-settings"),
    path("autonomy/decisions", autonomy.DecisionListView.as_view(), name="autonomy-decisions"),
    path("autonomy/inbox", autonomy.InboxView.as_view(), name="autonomy-inbox"),
    path("autonomy/inbox/<str:delta_id>", autonomy.InboxItemView.as_view(), name="autonomy-inbox-item"),
    path("autonomy/directives", autonomy.DirectiveListView.as_view(), name="autonomy-directives"),
    path("deltas/<str:delta_id>/why", why.DeltaWhyView.as_view(), name="delta-why"),
    path("producer-runs/<str:run_id>", producers.ProducerRunDetailView.as_view(), name="producer-run"),
    path("producers/<str:name>/run", producers.ProducerRunView.as_view(), name="producer-run-start"),
]
