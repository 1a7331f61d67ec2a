"""The fires app's REST endpoints, mounted under /v1/."""

from django.urls import path

from harness.fires import api, why

urlpatterns = [
    path("sessions/<str:session_id>/sit", api.SitView.as_view(), name="session-sit"),
    path("fires", api.FireListView.as_view(), name="fires"),
    path("fires/<str:fire_id>", api.FireDetailView.as_view(), name="fire"),
    path("fires/<str:fire_id>/cancel", api.FireCancelView.as_view(), name="fire-cancel"),
    path("introspect", api.IntrospectView.as_view(), name="introspect"),
    path("deltas/<str:delta_id>/why", why.DeltaWhyView.as_view(), name="delta-why"),
]
