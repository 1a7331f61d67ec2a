"""The conductor app's REST endpoints, mounted under /v1/."""

from django.urls import path

from harness.conductor import api

urlpatterns = [
    path("runs", api.RunListCreateView.as_view(), name="runs"),
    path("runs/<str:run_id>", api.RunDetailView.as_view(), name="run"),
    path("runs/<str:run_id>/cancel", api.RunCancelView.as_view(), name="run-cancel"),
    path("runs/<str:run_id>/graph", api.RunGraphView.as_view(), name="run-graph"),
    path("runs/<str:run_id>/events", api.RunEventsView.as_view(), name="run-events"),
]
