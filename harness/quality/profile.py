"""The workspace profile (seed 001's WorkspaceProfile): how far a workspace has come in quality runs,
and the multiplier its contracts are held to.

| maturity | total runs | quality multiplier |
|---|---|---|
| new | 0-9 | 0.85 (a lower bar: be encouraging) |
| developing | 10-49 | 1.00 |
| mature | 50+ | 1.15 when the average verifier score is above 0.75, else 1.00 |

The profile is built from plain values (the caller aggregates its quality runs and feedback) and
cached for 10 minutes per workspace in Django's cache (Redis, so every process shares it); a new
run or feedback invalidates it explicitly. A cache that cannot be reached is skipped, never an
error. Crossing 9 -> 10 or 49 -> 50 runs on the current run is a milestone."""

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from django.core.cache import cache
from redis.exceptions import RedisError

from harness.quality.events import Step
from harness.quality.models import QualityAttempt, QualityRun
from harness.quality.selectors import runs_stats

NEW, DEVELOPING, MATURE = "new", "developing", "mature"
DEVELOPING_RUNS, MATURE_RUNS = 10, 50
MATURE_VERIFIER_SCORE = 0.75  # the average a mature workspace must beat for the higher bar
MULTIPLIERS = {NEW: 0.85, DEVELOPING: 1.00, MATURE: 1.15}
PROFILE_CACHE_SECONDS = 10 * 60
COMMON_ISSUES_SHOWN = 5
CACHE_KEY = "harness:quality:profile:v1:{workspace_id}"
PROFILE_WINDOW = 500  # the most recent runs whose scores and issues the profile reads


@dataclass(frozen=True)
class WorkspaceProfile:
    workspace_id: str
    maturity: str
    total_runs: int
    avg_quality: float
    avg_verifier_score: float
    feedback_rate: float  # the share of runs a user gave feedback on
    common_issues: list[str] = field(default_factory=list)
    quality_multiplier: float = 1.0

    def as_event(self) -> dict:
        """The harness_workspace_profile event's fields."""
        return {"maturity": self.maturity, "total_runs": self.total_runs, "avg_quality": self.avg_quality,
                "feedback_rate": self.feedback_rate, "common_issues": list(self.common_issues),
                "quality_multiplier": self.quality_multiplier}


@dataclass(frozen=True)
class Milestone:
    level: str
    threshold: int
    description: str

    def as_event(self, profile: WorkspaceProfile) -> dict:
        """The milestone_unlocked event's fields."""
        return {"level": self.level, "threshold": self.threshold, "total_runs": profile.total_runs,
                "description": self.description, "quality_multiplier": profile.quality_multiplier}


MILESTONES = (
    Milestone(MATURE, MATURE_RUNS, f"{MATURE_RUNS} quality runs: a mature workspace, held to a higher bar "
                                   f"(x{MULTIPLIERS[MATURE]:.2f}) while its average verifier score stays above "
                                   f"{MATURE_VERIFIER_SCORE}"),
    Milestone(DEVELOPING, DEVELOPING_RUNS, f"{DEVELOPING_RUNS} quality runs: a developing workspace, held to the "
                                           f"standard bar (x{MULTIPLIERS[DEVELOPING]:.2f})"),
)


def maturity_of(total_runs: int) -> str:
    if total_runs >= MATURE_RUNS:
        return MATURE
    return DEVELOPING if total_runs >= DEVELOPING_RUNS else NEW


def quality_multiplier(*, total_runs: int, avg_verifier_score: float) -> float:
    maturity = maturity_of(total_runs)
    if maturity == MATURE and not avg_verifier_score > MATURE_VERIFIER_SCORE:
        return MULTIPLIERS[DEVELOPING]
    return MULTIPLIERS[maturity]


def milestone_crossed(before: int, after: int) -> Milestone | None:
    """The milestone the run count crossed going from `before` to `after` runs (the higher one if a
    jump crossed both); None when it crossed none."""
    return next((milestone for milestone in MILESTONES if before < milestone.threshold <= after), None)


def profile_build(*, workspace_id, total_runs: int, avg_quality: float | None, avg_verifier_score: float | None,
                  feedback_count: int, issues: Iterable[str] = ()) -> WorkspaceProfile:
    """The profile from the workspace's aggregates: its quality runs, their average quality and
    average verifier score (None without runs), how many runs got feedback, and the issues the runs
    raised (the most frequent kinds become `common_issues`)."""
    avg_verifier = float(avg_verifier_score or 0.0)
    return WorkspaceProfile(
        workspace_id=str(workspace_id), maturity=maturity_of(total_runs), total_runs=total_runs,
        avg_quality=round(float(avg_quality or 0.0), 4), avg_verifier_score=round(avg_verifier, 4),
        feedback_rate=round(min(1.0, feedback_count / total_runs), 4) if total_runs else 0.0,
        common_issues=common_issues(issues),
        quality_multiplier=quality_multiplier(total_runs=total_runs, avg_verifier_score=avg_verifier))


def common_issues(issues: Iterable[str], *, limit: int = COMMON_ISSUES_SHOWN) -> list[str]:
    """The most frequent kinds of issue, most frequent first (ties alphabetically). An issue's kind
    is its text before the first colon, without cited ids: "Output too short: 42 chars (minimum
    100)" and "... 61 chars ..." are one kind, "Output too short"."""
    counts = Counter(kind for issue in issues if (kind := issue_kind(issue)))
    return [kind for kind, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]]


def issue_kind(issue: str) -> str:
    head = str(issue).split(":", 1)[0]
    return " ".join(_CITED_ID.sub(" ", head).split())


def profile_cached(*, workspace_id, build: Callable[[], WorkspaceProfile], fresh: bool = False) -> WorkspaceProfile:
    """The workspace's cached profile, or `build()`'s, cached for 10 minutes. `fresh`: build it again
    (a run just finished), whatever the cache holds."""
    key = CACHE_KEY.format(workspace_id=workspace_id)
    try:
        cached = None if fresh else cache.get(key)
    except (RedisError, OSError):
        cached = None
    if cached is not None:
        return WorkspaceProfile(**cached)
    profile = build()
    try:
        cache.set(key, asdict(profile), PROFILE_CACHE_SECONDS)
    except (RedisError, OSError):
        pass
    return profile


def profile_invalidate(*, workspace_id) -> None:
    """Forget the cached profile (after a run or feedback): the next read builds it again."""
    try:
        cache.delete(CACHE_KEY.format(workspace_id=workspace_id))
    except (RedisError, OSError):
        pass


_CITED_ID = re.compile(r"\[[0-9a-fA-F]{8,32}\]")


# --- a workspace's profile, from its quality runs ------------------------------------------------------

def workspace_profile(*, workspace_id):
    """The workspace's profile (seed 001's WorkspaceProfile) from its finished quality runs and their
    feedback, cached 10 minutes."""
    return profile_cached(workspace_id=workspace_id, build=lambda: _profile_build(workspace_id))


def _profile_build(workspace_id, finishing: tuple[QualityRun, QualityAttempt] | None = None):
    """The profile; `finishing`: a run being accepted (its final attempt), counted as the newest done run
    before its row says so."""
    window = PROFILE_WINDOW - (finishing is not None)
    stats = runs_stats(workspace_id=workspace_id, window=window,
                       excluding_run_id=finishing[0].pk if finishing is not None else None)
    total, counted, combined_sum, combined_count = stats.runs, stats.counted, stats.combined_sum, stats.combined_count
    score_sum, issues = stats.score_sum, stats.issues
    if finishing is not None:
        final = finishing[1]
        total, counted, score_sum = total + 1, counted + 1, score_sum + final.verifier.get("score", 0.0)
        if final.combined is not None:
            combined_sum, combined_count = combined_sum + final.combined, combined_count + 1
        issues = [*final.contract.get("issues", []), *final.verifier.get("issues", []), *issues]
    return profile_build(workspace_id=workspace_id, total_runs=total,
                         avg_quality=combined_sum / combined_count if combined_count else None,
                         avg_verifier_score=score_sum / counted if counted else None,
                         feedback_count=stats.feedback_fires, issues=issues)


def profile_after_run(step: Step, final: QualityAttempt) -> None:
    """harness_workspace_profile after each run (counted in, as its final attempt says), and
    milestone_unlocked when this run crossed 9 -> 10 or 49 -> 50 runs: in the run's last step."""
    fire, run = step.fire, step.run
    profile = profile_cached(workspace_id=fire.workspace_id, fresh=True, build=lambda: _profile_build(
        fire.workspace_id, finishing=(run, final)))
    run.profile = profile.as_event()
    step.emit("harness_workspace_profile", run.profile)
    milestone = milestone_crossed(profile.total_runs - 1, profile.total_runs)
    if milestone is not None:
        step.emit("milestone_unlocked", milestone.as_event(profile))
