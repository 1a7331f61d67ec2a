"""The dashboard's list pages of their own, in the navigation: the proposals (pending first, filtered by
status and kind, decided inline) and Festinger (the world model searched, open conflicts with their
override, the conversations it saw). Thin views, like `views`: a filter's GET parameters are parsed by
its form (`filters`), the rows read through the apps' selectors, a page at a time."""

from urllib.parse import urlsplit

from django.core.paginator import Paginator
from django.http import QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from dashboard.access import dashboard_view
from dashboard.feed import proposal_row
from dashboard.festinger import conflict_items, conversations_seen
from dashboard.filters import ProposalFilterForm, WorldFilterForm, filter_form
from festinger.models import ConflictStatus
from festinger.selectors import conflicts_list, world_concepts, world_dimensions
from proposals.models import ProposalStatus
from proposals.selectors import pending_first, proposals_list, proposals_status_counts

PROPOSALS_PER_PAGE = 25
CONCEPTS_PER_PAGE = 30
OPEN_CONFLICTS = 50
CONVERSATIONS = 30


@require_GET
@dashboard_view
def proposals_page(request):
    """Every proposal of the workspace, pending first (then failed, then the rest, newest first in each),
    filtered by status, kind (its tool) and text; each links to its page (payload and audit) and is
    approved, denied or edited inline as in the feed."""
    current = request.dashboard
    form = filter_form(ProposalFilterForm, request.GET)
    wanted = form.cleaned_data
    proposals = pending_first(proposals_list(workspace=current.workspace, status=wanted["status"] or None,
                                             tool=wanted["kind"] or None, search=wanted["q"]))
    page = Paginator(proposals, PROPOSALS_PER_PAGE).get_page(request.GET.get("page"))
    query = _query(wanted)
    return render(request, "dashboard/proposals.html", {
        "current": current, "form": form, "page": page, "entries": [proposal_row(p) for p in page],
        "filtered": bool(query), "query": query, "tabs": _status_tabs(current.workspace, wanted),
    })


def proposal_tabs_oob(request) -> str:
    """The proposals page's status tabs counted anew, as an out-of-band swap (hx-swap-oob) for the response
    to an inline decision made on that page, so its counts follow the decision without a reload: for the
    filter of the page the request came from (htmx's HX-Current-URL). "" for a decision made elsewhere
    (the feed, a proposal's page), where no tabs are shown."""
    came_from = urlsplit(request.headers.get("HX-Current-URL", ""))
    form = ProposalFilterForm(QueryDict(came_from.query))
    if came_from.path != reverse("dashboard:proposals") or not form.is_valid():
        return ""
    return render_to_string("dashboard/partials/proposal_tabs.html", {
        "tabs": _status_tabs(request.dashboard.workspace, form.cleaned_data), "oob": True}, request=request)


@require_GET
@dashboard_view
def festinger_page(request):
    """Festinger's view of the workspace: its world model (the concepts placed in dimensions, searched by
    token or parent, filtered by dimension), the dimensions with how many concepts each holds, the open
    conflicts with the operator's override, and the conversations it saw (each linking to its page)."""
    current = request.dashboard
    workspace = current.workspace
    form = filter_form(WorldFilterForm, request.GET)
    wanted = form.cleaned_data
    dimensions = world_dimensions(workspace=workspace)
    concepts = world_concepts(workspace=workspace, search=wanted["q"], dimension=wanted["dimension"])
    page = Paginator(concepts, CONCEPTS_PER_PAGE).get_page(request.GET.get("page"))
    conflicts = list(conflicts_list(workspace=workspace, status=ConflictStatus.PENDING)[:OPEN_CONFLICTS])
    query = _query(wanted)
    return render(request, "dashboard/festinger.html", {
        "current": current, "form": form, "page": page, "filtered": bool(query), "query": query,
        "dimensions": [{**row, "query": _query({**wanted, "dimension": row["token"]}),
                        "chosen": row["token"] == wanted["dimension"]} for row in dimensions],
        "conflicts": {"conflicts": conflict_items(conflicts)}, "override_next": request.get_full_path(),
        "conversations": conversations_seen(workspace=workspace, limit=CONVERSATIONS),
    })


def _status_tabs(workspace, wanted: dict) -> dict:
    """The proposals page's status tabs for the filter `wanted`: each status with its count (of the proposals
    of the filter's kind) and its link (the filter kept), All with the total."""
    counts = proposals_status_counts(workspace=workspace, tool=wanted["kind"] or None)
    return {"statuses": [{"value": value, "label": label, "count": counts.get(value, 0),
                          "query": _query({**wanted, "status": value}), "chosen": wanted["status"] == value}
                         for value, label in ProposalStatus.choices],
            "all_query": _query({**wanted, "status": ""}), "all_chosen": not wanted["status"],
            "total": sum(counts.values())}


def _query(wanted: dict) -> str:
    """A filter's values as a query string (the empty ones left out): the links keep the filter."""
    return urlencode({name: value for name, value in wanted.items() if value})
