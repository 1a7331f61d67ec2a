"""REST endpoints of proposals, mounted under /v1/."""

from django.urls import path

from proposals import views

urlpatterns = [
    path("proposals", views.ProposalListView.as_view(), name="proposals"),
    path("proposals/draft", views.ProposalDraftView.as_view(), name="proposal-draft"),
    path("proposals/<int:proposal_id>", views.ProposalDetailView.as_view(), name="proposal"),
    path("proposals/<int:proposal_id>/approve", views.ProposalApproveView.as_view(), name="proposal-approve"),
    path("proposals/<int:proposal_id>/deny", views.ProposalDenyView.as_view(), name="proposal-deny"),
]
