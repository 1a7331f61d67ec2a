"""REST endpoints of lake, mounted under /v1/."""

from django.urls import path

from lake import api

urlpatterns = [
    path("deltas", api.DeltaListCreateView.as_view(), name="deltas"),
    path("deltas/<str:id_or_prefix>", api.DeltaDetailView.as_view(), name="delta-detail"),
    path("search", api.SearchView.as_view(), name="search"),
    path("media", api.MediaUploadView.as_view(), name="media"),
    path("media/<str:media_hash>", api.MediaDetailView.as_view(), name="media-detail"),
    path("lake/stats", api.StatsView.as_view(), name="lake-stats"),
]
