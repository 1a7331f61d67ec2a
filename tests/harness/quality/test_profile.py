import uuid

import pytest
from django.core.cache import cache

from fathom.redis_client import get_redis
from harness.quality.profile import (
    CACHE_KEY,
    PROFILE_CACHE_SECONDS,
    WorkspaceProfile,
    common_issues,
    maturity_of,
    milestone_crossed,
    profile_build,
    profile_cached,
    profile_invalidate,
    quality_multiplier,
)


@pytest.mark.parametrize(("runs", "avg_verifier", "maturity", "multiplier"), [
    (0, 0.0, "new", 0.85),
    (9, 0.99, "new", 0.85),
    (10, 0.0, "developing", 1.00),
    (49, 0.99, "developing", 1.00),
    (50, 0.76, "mature", 1.15),
    (50, 0.75, "mature", 1.00),  # above 0.75, not at it
    (500, 0.40, "mature", 1.00),
    (500, 0.90, "mature", 1.15),
])
def test_maturity_and_multiplier_transitions(runs, avg_verifier, maturity, multiplier):
    assert maturity_of(runs) == maturity
    assert quality_multiplier(total_runs=runs, avg_verifier_score=avg_verifier) == multiplier


@pytest.mark.parametrize(("before", "after", "expected"), [
    (8, 9, None), (9, 10, ("developing", 10)), (10, 11, None), (48, 49, None), (49, 50, ("mature", 50)),
    (50, 51, None), (0, 60, ("mature", 50)), (10, 10, None),
])
def test_milestones_at_nine_to_ten_and_forty_nine_to_fifty(before, after, expected):
    milestone = milestone_crossed(before, after)
    assert (None if milestone is None else (milestone.level, milestone.threshold)) == expected


def test_the_milestone_event_carries_the_profiles_runs_and_multiplier():
    profile = profile_build(workspace_id="w", total_runs=50, avg_quality=0.8, avg_verifier_score=0.8,
                            feedback_count=5)
    event = milestone_crossed(49, 50).as_event(profile)
    assert {key: event[key] for key in ("level", "threshold", "total_runs", "quality_multiplier")} == {
        "level": "mature", "threshold": 50, "total_runs": 50, "quality_multiplier": 1.15}
    assert event["description"]


def test_profile_from_aggregates():
    profile = profile_build(workspace_id="w1", total_runs=12, avg_quality=0.71234, avg_verifier_score=0.66,
                            feedback_count=3, issues=[
                                "Output too short: 42 chars (minimum 100)", "Output too short: 61 chars (minimum 100)",
                                "Unfounded citation [0123456789abcdef]: not returned to this fire by a tool",
                                "Unfounded citation [fedcba9876543210]: no such delta in this workspace",
                                "Insufficient insights: 1 created (minimum 3)", "[accuracy] Claim lacks a source",
                                ""])
    assert profile.as_event() == {
        "maturity": "developing", "total_runs": 12, "avg_quality": 0.7123, "feedback_rate": 0.25,
        "common_issues": ["Output too short", "Unfounded citation", "Insufficient insights",
                          "[accuracy] Claim lacks a source"],
        "quality_multiplier": 1.0}


def test_a_workspace_without_runs():
    profile = profile_build(workspace_id="w", total_runs=0, avg_quality=None, avg_verifier_score=None,
                            feedback_count=0)
    assert (profile.maturity, profile.feedback_rate, profile.quality_multiplier, profile.common_issues) == (
        "new", 0.0, 0.85, [])


def test_common_issues_keeps_the_five_most_frequent():
    issues = ["e: 1"] * 1 + ["d: 1"] * 2 + ["c"] * 3 + ["b"] * 3 + ["a"] * 4 + ["f"] * 5
    assert common_issues(issues) == ["f", "a", "b", "c", "d"]


@pytest.mark.django_db
def test_the_profile_is_cached_in_redis_for_ten_minutes_until_invalidated():
    workspace_id = uuid.uuid4()
    builds = []

    def build(runs):
        def run():
            builds.append(runs)
            return profile_build(workspace_id=workspace_id, total_runs=runs, avg_quality=0.5, avg_verifier_score=0.5,
                                 feedback_count=1)
        return run

    first = profile_cached(workspace_id=workspace_id, build=build(9))
    again = profile_cached(workspace_id=workspace_id, build=build(10))
    assert builds == [9]
    assert again == first and isinstance(again, WorkspaceProfile)
    key = cache.make_key(CACHE_KEY.format(workspace_id=workspace_id))
    assert 0 < get_redis().ttl(key) <= PROFILE_CACHE_SECONDS  # in Redis, where every process reads it

    profile_invalidate(workspace_id=workspace_id)
    assert get_redis().exists(key) == 0
    rebuilt = profile_cached(workspace_id=workspace_id, build=build(10))
    assert builds == [9, 10] and rebuilt.maturity == "developing"
    # another workspace has its own entry
    other = profile_cached(workspace_id=uuid.uuid4(), build=build(0))
    assert other.total_runs == 0 and builds == [9, 10, 0]
