"""Retry and self-healing (seed 001): whether a failed attempt is worth another (RetryPolicy), and
the correction block the next attempt reads (FailureAnalyzer).

The policy values per workflow are data: the defaults below are the seed's, and a caller passes
the values an operator edited (stored in the database) as `RetryPolicy(settings={...})`."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from harness.quality.contracts import HEALING_MARKER, WorkflowType

OTHER = "other"  # the settings of any workflow type without its own row
GAP_DECIMALS = 9  # gap and combined are compared after rounding away floating-point noise


@dataclass(frozen=True)
class RetrySettings:
    max_attempts: int
    good_enough_score: float
    low_quality_threshold: float


DEFAULT_RETRY_SETTINGS: dict[str, RetrySettings] = {
    WorkflowType.SYNTHESIS: RetrySettings(3, 0.70, 0.50),
    WorkflowType.FULL_PIPELINE: RetrySettings(3, 0.70, 0.50),
    WorkflowType.CHAT: RetrySettings(2, 0.60, 0.40),
    WorkflowType.RECOMMENDATION: RetrySettings(3, 0.65, 0.50),
    WorkflowType.DRAFTING: RetrySettings(3, 0.65, 0.50),
    OTHER: RetrySettings(3, 0.65, 0.50),
}


class RetryDecision(NamedTuple):
    retry: bool
    reason: str


def combined_score(*, contract_passed: bool, verifier_score: float) -> float:
    """The attempt's score as the policy sees it: the mean of the contract (1 or 0) and the verifier."""
    return round(((1.0 if contract_passed else 0.0) + verifier_score) / 2.0, GAP_DECIMALS)


class RetryPolicy:
    def __init__(self, settings: Mapping[str, RetrySettings] | None = None):
        """`settings` per workflow type (its string value) and "other"; missing rows keep the defaults."""
        self.settings = {str(key): value for key, value in {**DEFAULT_RETRY_SETTINGS, **(settings or {})}.items()}

    def for_workflow(self, workflow_type: str) -> RetrySettings:
        return self.settings.get(str(workflow_type), self.settings[OTHER])

    def should_retry(self, *, workflow_type: str, attempt: int, contract_passed: bool, verifier_score: float,
                     is_error: bool = False) -> RetryDecision:
        """The seed's decision logic, branch for branch and in its order, `attempt` being the number
        (from 1) of the attempt just judged, and gap = good_enough_score - combined. When no branch
        applies (possible only with edited settings) there is no retry."""
        policy = self.for_workflow(workflow_type)
        combined = combined_score(contract_passed=contract_passed, verifier_score=verifier_score)
        gap = round(policy.good_enough_score - combined, GAP_DECIMALS)
        if attempt >= policy.max_attempts:
            return RetryDecision(False, "Max attempts reached")
        if combined >= policy.good_enough_score:
            return RetryDecision(False, "Quality sufficient")
        if gap < 0.10 and contract_passed:
            return RetryDecision(False, "Marginal gap — retry unlikely to help")
        if gap > 0.40 and attempt >= 2:
            return RetryDecision(False, "Severe gap persists — source material may be insufficient")
        if is_error:
            return RetryDecision(True, "Hard error — retrying")
        if not contract_passed:
            return RetryDecision(True, "Contract failed — retrying with healing prompt")
        if verifier_score < policy.low_quality_threshold:
            return RetryDecision(True, "Low quality — retrying")
        return RetryDecision(False, "No retry criterion met")


class FailureAnalyzer:
    @staticmethod
    def build_healing_prompt(*, original_query: str, attempt: int, max_attempts: int,
                             contract_issues: Sequence[str] = (), verifier_issues: Sequence[str] = (),
                             verifier_feedback: str = "") -> str:
        """The original query, then the seed's correction block for the attempt about to run
        (`attempt` of `max_attempts`): one "MISSING REQUIREMENT:" line per contract issue, one
        "QUALITY ISSUE:" line per verifier issue, the reviewer's feedback when there is any, and
        the closing instruction, one line each as the seed writes them."""
        lines = [
            original_query,
            f"{HEALING_MARKER} Attempt {attempt} of {max_attempts}]",
            "Your previous response had quality issues that must be corrected:",
            *(f"MISSING REQUIREMENT: {issue}" for issue in contract_issues),
            *(f"QUALITY ISSUE: {issue}" for issue in verifier_issues),
        ]
        if verifier_feedback.strip():
            lines.append(f"Reviewer feedback: {verifier_feedback.strip()}")
        lines.append("Produce a complete response that fully addresses ALL items above.")
        return "\n".join(lines)
