"""Read queries of proposals."""

from django.db.models import Case, Count, IntegerField, Prefetch, Q, QuerySet, Value, When

from fathom.errors import NotFoundError
from proposals.models import Decision, Proposal, ProposalStatus


def proposals_list(*, workspace, status: str | None = None, tool: str | None = None, level: int | None = None,
                   producer: str | None = None, search: str = "") -> QuerySet[Proposal]:
    """The workspace's proposals, newest first, each with `latest_decisions` prefetched (one
    query for the page, one for its decisions); `search`: those whose title or rationale contains it
    (any case)."""
    queryset = Proposal.objects.filter(workspace=workspace)
    if search:
        queryset = queryset.filter(Q(title__icontains=search) | Q(rationale__icontains=search))
    if status:
        queryset = queryset.filter(status=status)
    if tool:
        queryset = queryset.filter(tool=tool)
    if level is not None:
        queryset = queryset.filter(level=level)
    if producer:
        queryset = queryset.filter(producer=producer)
    return queryset.prefetch_related(
        Prefetch("decisions", queryset=Decision.objects.order_by("-created_at", "-id"), to_attr="decisions_newest")
    )


def proposal_get(*, workspace, proposal_id: int) -> Proposal:
    """One proposal of the workspace, with its decisions newest first; NotFoundError otherwise
    (another workspace's proposal does not exist for this one)."""
    proposal = proposals_list(workspace=workspace).filter(pk=proposal_id).first()
    if proposal is None:
        raise NotFoundError(f"no proposal {proposal_id} in this workspace")
    return proposal


def latest_decision(proposal: Proposal) -> Decision | None:
    decisions = getattr(proposal, "decisions_newest", None)
    if decisions is None:
        return proposal.decisions.order_by("-created_at", "-id").first()
    return decisions[0] if decisions else None


# Pending proposals first, then failed ones (they need a look), then the rest.
ATTENTION = Case(When(status=ProposalStatus.PENDING, then=Value(0)),
                 When(status=ProposalStatus.FAILED, then=Value(1)),
                 default=Value(2), output_field=IntegerField())
PENDING_FIRST = (ATTENTION.asc(), "-created_at", "-id")


def pending_first(queryset: QuerySet[Proposal]) -> QuerySet[Proposal]:
    """Pending proposals first, then failed ones, then the rest; newest first within each."""
    return queryset.order_by(*PENDING_FIRST)


def proposals_status_counts(*, workspace, tool: str | None = None) -> dict[str, int]:
    """{status: how many of the workspace's proposals (of `tool`, when given) are in it}, one query."""
    queryset = Proposal.objects.filter(workspace=workspace)
    if tool:
        queryset = queryset.filter(tool=tool)
    return dict(queryset.order_by().values_list("status").annotate(count=Count("id")))
