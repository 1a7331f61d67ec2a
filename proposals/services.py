"""The proposal lifecycle: draft, the auto-approve gate, approve, deny. Every producer (REST, the
harness's tools, scripts, the admin) goes through these functions.

A draft is refused (ApplicationError, a 400 naming the rule) when approving it would fail: the
handler's checks run at draft as at approval. Every draft is mirrored in the lake as a
`kind:proposal` delta and every decision as a `kind:decision` delta, in the same transaction, so
the feed shows them whatever the entry point (REST, CLI, admin, a fire's tool, a producer).

Approval executes the proposal in the same transaction as its decision, under a row lock: two
approvals racing execute once, and the second returns the first's result. When execution fails the
decision is still recorded and the proposal is marked failed with the reason; an operator may fix the
payload and approve it again.
"""

import logging
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from fathom.errors import ApplicationError, ConflictError
from proposals import lake_io
from proposals.handlers import get_handler
from proposals.models import Decision, DecisionAction, Proposal, ProposalPolicy, ProposalStatus

logger = logging.getLogger(__name__)

AUTO_POLICY = "auto-policy"


@transaction.atomic
def proposal_draft(*, workspace, tool: str, title: str, payload: dict, rationale: str = "", producer: str,
                   level: int | None = None, tags: Sequence[str] = ()) -> Proposal:
    """Validate and record a proposal (refused with the rule it breaks when approval would fail),
    mirror it into the lake as a kind:proposal delta (with `tags`), then run the gate: a provenance
    proposal at or below the workspace's threshold (default 2) is approved at once by the
    auto-policy; anything else waits for an operator. Returns the proposal in its resulting state."""
    handler = get_handler(tool)
    title = (title or "").strip()
    if not title:
        raise ApplicationError("title: may not be blank", code="invalid")
    if not (producer or "").strip():
        raise ApplicationError("producer: may not be blank", code="invalid")
    if level is not None:
        if not handler.has_level:
            raise ApplicationError(f"level: {tool} proposals have no level", code="invalid")
        if isinstance(payload, dict) and payload.get("level") not in (None, level):
            raise ApplicationError(f"level: {level} differs from payload.level {payload['level']}", code="invalid")
        payload = {**payload, "level": level} if isinstance(payload, dict) else payload
    cleaned = handler.clean(workspace=workspace, payload=payload)
    proposal = Proposal.objects.create(
        workspace=workspace, tool=tool, title=title[:300], payload=cleaned, level=handler.level_of(cleaned),
        rationale=rationale or "", producer=producer.strip()[:200],
    )
    lake_io.proposal_delta_write(proposal=proposal, tags=tags)
    threshold = proposal_policy_get(workspace=workspace).auto_approve_max_level
    if handler.auto_approve_by_level and proposal.level is not None and proposal.level <= threshold:
        proposal = proposal_approve(proposal=proposal, decided_by=f"{AUTO_POLICY}:level<={threshold}")
    return proposal


@transaction.atomic
def proposal_approve(*, proposal: Proposal, decided_by: str, payload: dict | None = None) -> Proposal:
    """Approve (with `payload`, an edited payload: an "edit" decision) and execute, once.

    Approving an approved proposal changes nothing and executes nothing. A denied one cannot be
    approved (ConflictError). An edited payload that does not validate is an ApplicationError and
    nothing is recorded. A failed one may be approved again."""
    locked = Proposal.objects.select_for_update().select_related("workspace").get(pk=proposal.pk)
    if locked.status == ProposalStatus.APPROVED:
        return locked
    if locked.status == ProposalStatus.DENIED:
        raise ConflictError(f"proposal {locked.pk} was denied; draft a new one", code="proposal_denied")
    _require_decider(decided_by)
    handler = get_handler(locked.tool)
    approved = handler.clean(workspace=locked.workspace, payload=locked.payload if payload is None else payload,
                             check=False)
    edited = payload is not None and approved != locked.payload
    decision = Decision(workspace=locked.workspace, proposal=locked, decided_by=decided_by, payload=approved,
                        action=DecisionAction.EDIT if edited else DecisionAction.APPROVE)
    try:
        with transaction.atomic():
            handler.check(workspace=locked.workspace, payload=approved)
            decision.result_ref = handler.execute(proposal=locked, payload=approved, decided_by=decided_by) or ""
    except Exception as exc:  # any failure of the execution fails the proposal, with its reason
        reason = exc.message if isinstance(exc, ApplicationError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, ApplicationError):
            logger.exception("executing proposal %s (%s) failed", locked.pk, locked.tool)
        decision.error = reason
        locked.status, locked.failure_reason, locked.result_ref = ProposalStatus.FAILED, reason, ""
    else:
        locked.status, locked.failure_reason, locked.result_ref = ProposalStatus.APPROVED, "", decision.result_ref
    decision.save()
    lake_io.decision_delta_write(proposal=locked, decision=decision)
    if handler.has_level:
        locked.level = handler.level_of(approved)
    locked.decided_at = timezone.now()
    locked.save(update_fields=["status", "failure_reason", "result_ref", "level", "decided_at"])
    return locked


@transaction.atomic
def proposal_deny(*, proposal: Proposal, decided_by: str, reason: str) -> Proposal:
    """Record a denial; the proposal stays visible as denied. Denying twice changes nothing; an
    approved proposal cannot be denied (what it produced exists)."""
    locked = Proposal.objects.select_for_update().get(pk=proposal.pk)
    if locked.status == ProposalStatus.DENIED:
        return locked
    if locked.status == ProposalStatus.APPROVED:
        raise ConflictError(f"proposal {locked.pk} is approved already (it produced {locked.result_ref or 'nothing'})",
                            code="proposal_approved")
    _require_decider(decided_by)
    reason = (reason or "").strip()
    if not reason:
        raise ApplicationError("reason: say why the proposal is denied", code="invalid")
    decision = Decision.objects.create(workspace=locked.workspace, proposal=locked, action=DecisionAction.DENY,
                                       decided_by=decided_by, payload=locked.payload, reason=reason)
    locked.status, locked.decided_at = ProposalStatus.DENIED, timezone.now()
    locked.save(update_fields=["status", "decided_at"])
    lake_io.decision_delta_write(proposal=locked, decision=decision)
    return locked


def proposal_policy_get(*, workspace) -> ProposalPolicy:
    """The workspace's gate settings (defaults when it has none saved)."""
    return ProposalPolicy.objects.filter(workspace=workspace).first() or ProposalPolicy(workspace=workspace)


def proposal_policy_set(*, workspace, auto_approve_max_level: int) -> ProposalPolicy:
    policy, _ = ProposalPolicy.objects.update_or_create(
        workspace=workspace, defaults={"auto_approve_max_level": auto_approve_max_level})
    return policy


def _require_decider(decided_by: str) -> None:
    if not (decided_by or "").strip():
        raise ApplicationError("decided_by: say who decides (operator:<user> or auto-policy:...)", code="invalid")
