"""REST endpoints of proposals, mounted under /v1/."""

from django.urls import path

from proposals import api

urlpatterns = [
    path("proposals", api.ProposalListView.as_view(), name="proposals"),
    path("proposals/draft", api.ProposalDraftView.as_view(), name="proposal-draft"),
    path("proposals/<int:proposal_id>", api.ProposalDetailView.as_view(), name="proposal"),
    path("proposals/<int:proposal_id>/approve", api.ProposalApproveView.as_view(), name="proposal-approve"),
    path("proposals/<int:proposal_id>/deny", api.ProposalDenyView.as_view(), name="proposal-deny"),
]
