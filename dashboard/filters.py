"""The filters of the dashboard's lists, as GET parameters kept in the URL (a filtered page is a link to
share, and the back button comes back to it): the feed's (kind of entry, status, text), the proposals
page's (status, kind, text), the world model's (text, dimension) and the runs page's (text, mode,
status, stop reason, errors). Each is a form; a value it does not know is refused with a 400 page that
names it, never a 500."""

from dataclasses import dataclass

from django import forms
from django.utils.http import urlencode

from fathom.errors import ApplicationError
from harness.fires.models import Fire
from proposals.handlers import registered_tools
from proposals.models import ProposalStatus

SEARCH_MAX = 200

# The feed's kinds of entry: a kind of fire (its mode) or the proposals.
FEED_KINDS = {"answers": ("Answers", Fire.Mode.REACTIVE), "sits": ("Sits", Fire.Mode.SELF_DIRECTING),
              "proposals": ("Proposals", None)}


@dataclass(frozen=True)
class FeedStatus:
    label: str
    fires: tuple = ()  # the fire statuses it means (none: no fire has it)
    proposal: str = ""  # the proposal status it means ("": no proposal has it)


FEED_STATUSES = {
    "running": FeedStatus("Thinking", fires=(Fire.Status.ACCEPTED, Fire.Status.RUNNING)),
    "finished": FeedStatus("Answered", fires=(Fire.Status.FINISHED,)),
    "failed": FeedStatus("Failed", fires=(Fire.Status.FAILED,), proposal=ProposalStatus.FAILED),
    "cancelled": FeedStatus("Cancelled", fires=(Fire.Status.CANCELLED,)),
    "pending": FeedStatus("Pending", proposal=ProposalStatus.PENDING),
    "approved": FeedStatus("Approved", proposal=ProposalStatus.APPROVED),
    "denied": FeedStatus("Denied", proposal=ProposalStatus.DENIED),
}


class FilterError(ApplicationError):
    """A filter's GET parameters hold a value the page does not know (a 400 page)."""


@dataclass(frozen=True)
class FeedMatch:
    """What the feed shows: every entry, or those of one kind, in one status, containing a text."""

    kind: str = ""
    status: str = ""
    search: str = ""

    @property
    def active(self) -> bool:
        return bool(self.kind or self.status or self.search)

    @property
    def fires(self) -> dict | None:
        """The fire selectors' filters (`fires_top_level`), or None when no fire can match."""
        status = FEED_STATUSES.get(self.status)
        if FEED_KINDS.get(self.kind, ("", ""))[1] is None or (status and not status.fires):
            return None
        return {"modes": [FEED_KINDS[self.kind][1]] if self.kind else None,
                "statuses": list(status.fires) if status else None, "search": self.search}

    @property
    def proposals(self) -> dict | None:
        """`proposals_list`'s filters, or None when no proposal can match."""
        status = FEED_STATUSES.get(self.status)
        if (self.kind and self.kind != "proposals") or (status and not status.proposal):
            return None
        return {"status": status.proposal if status else None, "search": self.search}

    @property
    def query(self) -> str:
        """The filter as a URL's query string ("" when it shows everything)."""
        return urlencode({name: value for name, value in (("kind", self.kind), ("status", self.status),
                                                          ("q", self.search)) if value})


class FeedFilterForm(forms.Form):
    kind = forms.ChoiceField(required=False, label="Show",
                             choices=[("", "Everything"), *((key, label) for key, (label, _) in FEED_KINDS.items())])
    status = forms.ChoiceField(required=False, label="Status",
                               choices=[("", "Any status"), *((key, s.label) for key, s in FEED_STATUSES.items())])
    q = forms.CharField(required=False, max_length=SEARCH_MAX, label="Search")


def feed_match(params) -> FeedMatch:
    """The feed's filter from a request's GET parameters; FilterError when one holds an unknown value."""
    form = filter_form(FeedFilterForm, params)
    return FeedMatch(kind=form.cleaned_data["kind"], status=form.cleaned_data["status"],
                     search=form.cleaned_data["q"])


class ProposalFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, label="Status",
                               choices=[("", "Any status"), *ProposalStatus.choices])
    kind = forms.ChoiceField(required=False, label="Kind")
    q = forms.CharField(required=False, max_length=SEARCH_MAX, label="Search")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [("", "Any kind"), *((tool, tool) for tool in registered_tools())]


class WorldFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=SEARCH_MAX, label="Concept")
    dimension = forms.CharField(required=False, max_length=SEARCH_MAX, label="Dimension")


class FireFilterForm(forms.Form):
    """The runs page's filters (GET): every one optional; an unknown value is a 400, never ignored
    silently nor a 500."""

    q = forms.CharField(required=False, max_length=SEARCH_MAX, label="Question or answer contains")
    mode = forms.ChoiceField(required=False, choices=[("", "Any mode"), *Fire.Mode.choices])
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *Fire.Status.choices])
    stop = forms.ChoiceField(required=False, choices=[("", "Any stop reason"), *Fire.StopReason.choices],
                             label="Stop reason")
    errored = forms.BooleanField(required=False, label="Failed or with an error")
    page = forms.IntegerField(required=False, min_value=1)
    runs_page = forms.IntegerField(required=False, min_value=1)

    def clean_errored(self) -> bool:
        # BooleanField alone reads any word but "false" and "0" as ticked; a browser sends a ticked box as "on".
        if self.data.get("errored", "") not in ("", "on"):
            raise forms.ValidationError(f"{self.data['errored']!r} is not a value of this box: tick it (on) "
                                        "or leave it out")
        return self.cleaned_data["errored"]


def filter_form(form_class, params) -> forms.Form:
    """The bound, valid filter form of these GET parameters (the page number aside); FilterError naming
    what is wrong otherwise."""
    form = form_class(params)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {error}" for name, errors in form.errors.items() for error in errors)
        raise FilterError(f"This filter cannot be applied ({problems}).", code="bad_filter")
    return form
