"""The autonomy app's REST endpoints, mounted under /v1/."""

from django.urls import path

from harness.autonomy import api
from harness.autonomy.producers import api as producers

urlpatterns = [
    path("autonomy/pressure", api.PressureView.as_view(), name="autonomy-pressure"),
    path("autonomy/settings", api.SettingsView.as_view(), name="autonomy-settings"),
    path("autonomy/status", api.StatusView.as_view(), name="autonomy-status"),
    path("autonomy/decisions", api.DecisionListView.as_view(), name="autonomy-decisions"),
    path("autonomy/inbox", api.InboxView.as_view(), name="autonomy-inbox"),
    path("autonomy/inbox/<str:delta_id>", api.InboxItemView.as_view(), name="autonomy-inbox-item"),
    path("autonomy/directives", api.DirectiveListView.as_view(), name="autonomy-directives"),
    path("producer-runs/<str:run_id>", producers.ProducerRunDetailView.as_view(), name="producer-run"),
    path("producers/<str:name>/run", producers.ProducerRunView.as_view(), name="producer-run-start"),
]
