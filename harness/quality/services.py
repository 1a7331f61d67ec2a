"""State changes of the quality harness outside a fire's attempts: the workspace's settings and retry
policy (seed 001's "Tuning"), a run closed when its fire ended, users' feedback, and the calibration the
beat task rebuilds from it every 5 minutes (seed 001's "Calibration from feedback")."""

from django.db import transaction
from django.utils import timezone

from fathom.errors import ApplicationError
from harness.fires.models import Fire
from harness.quality.configuration import quality_settings_get, retry_policy_get
from harness.quality.models import (
    WORKFLOWS,
    Feedback,
    QualityRetryPolicy,
    QualityRun,
    QualitySettings,
    contracts_problems,
)
from harness.quality.profile import profile_invalidate

CALIBRATION_EXAMPLES = 3
MISMATCH_UP_BELOW = 0.6  # a thumbs up on an answer the verifier scored below this is a mismatch
MISMATCH_DOWN_ABOVE = 0.7  # and a thumbs down on one it scored above this
CALIBRATION_WINDOW = 200  # the most recent feedback rows looked at


SETTINGS_FIELDS = ("enabled", "swarm_enabled", "swarm_min_sources", "swarm_specialists")
RETRY_FIELDS = ("max_attempts", "good_enough_score", "low_quality_threshold")


@transaction.atomic
def quality_settings_update(*, workspace_id, retry_policies: dict | None = None, contracts: dict | None = None,
                            **fields) -> QualitySettings:
    """Change the workspace's switches (`SETTINGS_FIELDS`: the harness, the swarm and its specialists);
    per workflow named in `retry_policies`, its retry thresholds (`RETRY_FIELDS`); per workflow named
    in `contracts`, the contract thresholds that replace the seed's (`CONTRACT_FIELDS`; a null removes
    one, an empty object all of the workflow's). The next fire reads them (no cache holds them)."""
    unknown = set(fields) - set(SETTINGS_FIELDS)
    if unknown:
        raise ApplicationError(f"unknown quality settings: {', '.join(sorted(unknown))}")
    for name, by_workflow in (("retry_policies", retry_policies), ("contracts", contracts)):
        unknown = set(by_workflow or {}) - set(WORKFLOWS)
        if unknown:
            raise ApplicationError(f"unknown workflows: {', '.join(sorted(unknown))} (one of {', '.join(WORKFLOWS)})",
                                   details={name: sorted(unknown)})
    row = quality_settings_get(workspace_id=workspace_id)
    if contracts is not None:
        merged = {**row.contracts}
        for workflow, thresholds in contracts.items():
            kept = {**merged.get(workflow, {}), **thresholds} if thresholds else {}
            merged[workflow] = {name: value for name, value in kept.items() if value is not None}
        merged = {workflow: thresholds for workflow, thresholds in merged.items() if thresholds}
        problems = contracts_problems(merged)
        if problems:
            raise ApplicationError("; ".join(problems), details={"contracts": problems})
        fields["contracts"] = merged
    if fields:
        QualitySettings.objects.filter(pk=row.pk).update(**fields)
    if retry_policies:
        retry_policy_get(workspace_id=workspace_id)  # the rows exist with the seed's defaults
        for workflow, values in retry_policies.items():
            QualityRetryPolicy.objects.filter(workspace_id=workspace_id, workflow_type=workflow).update(
                **{k: v for k, v in values.items() if k in RETRY_FIELDS})
    return QualitySettings.objects.get(pk=row.pk)


def run_ended(*, fire: Fire) -> int:
    """Close the fire's QualityRun if it is still open (the fire was cancelled, failed, or ended before
    an answer was kept): state ended with the fire's stop reason, nothing awaited any more. Runs that
    kept an answer are left as they are. Returns how many were closed (0 or 1)."""
    return QualityRun.objects.filter(fire=fire, state__in=QualityRun.OPEN).update(
        state=QualityRun.State.ENDED, end_reason=fire.stop_reason or fire.status, waiting_for="", waiting_token="",
        waiting_since=None, finished_at=timezone.now())


def feedback_create(*, fire: Fire, rating: str, comment: str = "", author: str = "") -> Feedback:
    """Record a user's thumbs on a finished fire's answer, with the verifier's score it had."""
    if rating not in Feedback.Rating.values:
        raise ApplicationError(f"rating must be one of {', '.join(Feedback.Rating.values)}")
    if not fire.is_terminal or not fire.response:
        raise ApplicationError("feedback is for a fire that has answered")
    score = QualityRun.objects.filter(fire=fire).values_list("verifier_score", flat=True).first()
    feedback = Feedback.objects.create(workspace_id=fire.workspace_id, fire=fire, rating=rating, comment=comment,
                                       author=author, verifier_score=score)
    profile_invalidate(workspace_id=fire.workspace_id)
    return feedback


def calibration_rebuild(*, workspace_id) -> str:
    """The workspace's calibration context: up to 3 recent mismatches between the verifier's score and
    the user's thumbs, each as an example the verifier's system prompt carries. Idempotent."""
    rows = (Feedback.objects.filter(workspace_id=workspace_id, verifier_score__isnull=False)
            .select_related("fire").order_by("-created_at")[:CALIBRATION_WINDOW])
    examples = []
    for row in rows:
        up, score = row.rating == Feedback.Rating.UP, row.verifier_score
        if (up and score < MISMATCH_UP_BELOW) or (not up and score > MISMATCH_DOWN_ABOVE):
            verdict = "liked" if up else "disliked"
            examples.append(f"- You scored {score:.2f} an answer the user {verdict}"
                            f"{f' ({row.comment.strip()[:200]})' if row.comment.strip() else ''}. "
                            f"Query: {' '.join(row.fire.question.split())[:200]}")
        if len(examples) == CALIBRATION_EXAMPLES:
            break
    text = "\n".join(examples)
    settings = quality_settings_get(workspace_id=workspace_id)
    with transaction.atomic():
        QualitySettings.objects.filter(pk=settings.pk).update(calibration=text, calibration_built_at=timezone.now())
    return text


def calibrations_rebuild() -> int:
    """Rebuild the calibration of every workspace with feedback (run by beat every 5 minutes)."""
    workspaces = Feedback.objects.values_list("workspace_id", flat=True).distinct()
    count = 0
    for workspace_id in workspaces:
        calibration_rebuild(workspace_id=workspace_id)
        count += 1
    return count
