"""Reads of autonomy, always scoped by workspace: the pressure series, the decisions, the producers'
runs with their effect on pressure, the inbox and the crystal of directives."""

from datetime import timedelta

from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone

from fathom.errors import NotFoundError
from harness.autonomy.models import AutonomyDecision, InboxMark, PressureSample, ProducerRun
from harness.autonomy.pressure import DIRECTIVE_TAG
from lake.models import Delta
from lake.selectors import delta_get

SELF_DIRECTING_TAG = "mode:self_directing"
REFLECTION_TAG = "kind:reflection"
INBOX_KINDS = {"directive": DIRECTIVE_TAG}
REFLECTIVE_TAG = "producer:reflective"
# What the inbox holds: directives, reflections (the reflective producer's provenance, and the
# attestations of Sits), and Sit transcripts (the cards of self-directing fires).
_INBOX = (Q(tags__overlap=[DIRECTIVE_TAG, REFLECTION_TAG])
          | Q(tags__contains=[REFLECTIVE_TAG, "kind:provenance"])
          | Q(tags__contains=[SELF_DIRECTING_TAG, "kind:card"])
          | Q(tags__contains=[SELF_DIRECTING_TAG, "kind:standpoint-attestation"]))


def pressure_series(*, workspace, hours: int):
    """(at, value) of the samples of the last `hours`, oldest first."""
    since = timezone.now() - timedelta(hours=hours)
    return (PressureSample.objects.filter(workspace=workspace, created_at__gte=since).order_by("created_at")
            .values_list("created_at", "value"))


def decisions_list(*, workspace, action: str = "", reason: str = ""):
    decisions = AutonomyDecision.objects.filter(workspace=workspace)
    if action:
        decisions = decisions.filter(action=action)
    if reason:
        decisions = decisions.filter(reason=reason)
    return decisions


def producer_runs_with_effect(*, workspace, limit: int = 5):
    """The newest producer runs, each with `pressure_before` (the last sample before it was queued)
    and `pressure_after` (the first sample after it finished, None while none is taken): what it did
    to the pressure, in one query."""
    samples = PressureSample.objects.filter(workspace=OuterRef("workspace"))
    before = samples.filter(created_at__lte=OuterRef("created_at")).order_by("-created_at").values("value")[:1]
    after = samples.filter(created_at__gte=OuterRef("finished_at")).order_by("created_at").values("value")[:1]
    return (ProducerRun.objects.filter(workspace=workspace)
            .annotate(pressure_before=Subquery(before), pressure_after=Subquery(after))[:limit])


def producer_run_words(run) -> str:
    """A producer run as an operator reads it, with what it did to the pressure."""
    what = f"{run.producer}{f' {run.mode}' if run.mode else ''} run {run.pk} ({run.origin}): {run.status}"
    if run.status == ProducerRun.Status.DONE:
        count = sum(1 for item in run.proposals if "id" in item)
        what += f", {count} proposal{'' if count == 1 else 's'} over {run.read} deltas shown"
    if run.pressure_before is not None and run.pressure_after is not None:
        what += f"; pressure {run.pressure_before:.2f} before, {run.pressure_after:.2f} after"
    elif run.pressure_before is not None:
        what += f"; pressure {run.pressure_before:.2f} before"
    return what


def inbox_items(*, workspace, state: str = "", kind: str = ""):
    """The inbox's deltas, newest first, each with `inbox_state` ("new" when unmarked)."""
    marks = InboxMark.objects.filter(workspace=workspace, delta_id=OuterRef("pk"))
    items = Delta.objects.filter(_INBOX, workspace=workspace).annotate(
        inbox_state=Subquery(marks.values("state")[:1]), inbox_trigger=Subquery(marks.values("trigger_id")[:1]))
    if kind == "transcript":
        items = items.filter(tags__contains=[SELF_DIRECTING_TAG, "kind:card"])
    elif kind == "reflection":
        items = items.exclude(tags__overlap=[DIRECTIVE_TAG]).exclude(tags__contains=["kind:card"])
    elif kind:
        items = items.filter(tags__contains=[INBOX_KINDS[kind]])
    if state == "new":
        items = items.filter(inbox_state__isnull=True)
    elif state:
        items = items.filter(inbox_state=state)
    return items.order_by("-created_at", "-id")


def inbox_item_get(*, workspace, delta_id: str) -> Delta:
    """An inbox item by id or unique prefix; NotFoundError for anything not in this workspace's inbox."""
    delta = delta_get(workspace=workspace, id_or_prefix=delta_id)
    if not Delta.objects.filter(_INBOX, pk=delta.pk).exists():
        raise NotFoundError(f"delta {delta.pk} is not an inbox item (a directive, reflection or Sit transcript)")
    return delta


def directives_list(*, workspace):
    """The crystal of directives: every kind:directive delta, what Fathom named for itself, newest first."""
    return inbox_items(workspace=workspace, kind="directive")


def inbox_kind(delta: Delta) -> str:
    if DIRECTIVE_TAG in delta.tags:
        return "directive"
    if "kind:card" in delta.tags:
        return "transcript"
    return "reflection"
