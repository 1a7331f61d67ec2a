"""REST endpoints of festinger, mounted under /v1/."""

from django.urls import path

from festinger import api, recollection_api
from festinger.loops import api as loops_api

urlpatterns = [
    path("festinger/iknowthat", api.IKnowThatView.as_view(), name="festinger-iknowthat"),
    path("festinger/conflicts", api.ConflictListView.as_view(), name="festinger-conflicts"),
    path("festinger/conflicts/<int:conflict_id>", api.ConflictDetailView.as_view(), name="festinger-conflict"),
    path("festinger/conflicts/<int:conflict_id>/resolve", api.ConflictResolveView.as_view(),
         name="festinger-conflict-resolve"),
    path("festinger/conflicts/<int:conflict_id>/dismiss", api.ConflictDismissView.as_view(),
         name="festinger-conflict-dismiss"),
    path("festinger/resolve/run", api.ResolutionRunView.as_view(), name="festinger-resolve-run"),
    path("festinger/resolve/runs/<int:run_id>", api.ResolutionRunDetailView.as_view(), name="festinger-resolve-runs"),
    path("festinger/recollection", recollection_api.RecollectionView.as_view(), name="festinger-recollection"),
    path("festinger/reload", recollection_api.ReloadView.as_view(), name="festinger-reload"),
    path("festinger/loops", loops_api.LoopEventListView.as_view(), name="festinger-loops"),
]
