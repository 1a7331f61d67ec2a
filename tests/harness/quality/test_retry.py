import pytest

from harness.quality.retry import (
    DEFAULT_RETRY_SETTINGS,
    FailureAnalyzer,
    RetryPolicy,
    RetrySettings,
    combined_score,
)

MAX = "Max attempts reached"
SUFFICIENT = "Quality sufficient"
MARGINAL = "Marginal gap — retry unlikely to help"
SEVERE = "Severe gap persists — source material may be insufficient"
ERROR = "Hard error — retrying"
CONTRACT = "Contract failed — retrying with healing prompt"
LOW = "Low quality — retrying"


@pytest.mark.parametrize(("workflow", "attempt", "contract_passed", "verifier", "is_error", "expected"), [
    # attempts run out before anything else is looked at, even a hard error
    ("synthesis", 3, False, 0.0, True, (False, MAX)),
    ("chat", 2, False, 0.0, False, (False, MAX)),
    ("recommendation", 3, False, 0.0, False, (False, MAX)),
    # combined >= good enough (synthesis 0.70: passed + 0.40 is exactly 0.70)
    ("synthesis", 1, True, 0.40, False, (False, SUFFICIENT)),
    ("synthesis", 1, True, 0.95, True, (False, SUFFICIENT)),
    ("chat", 1, True, 0.20, False, (False, SUFFICIENT)),  # 0.60 = chat's bar
    # gap < 0.10 with the contract passed: 0.70 - 0.65
    ("synthesis", 1, True, 0.30, False, (False, MARGINAL)),
    ("drafting", 1, True, 0.20, True, (False, MARGINAL)),  # 0.65 - 0.60, before the error branch
    # a gap of exactly 0.10 is not marginal (0.70 - 0.60): low quality then
    ("synthesis", 1, True, 0.20, False, (True, LOW)),
    ("chat", 1, True, 0.0, False, (True, LOW)),  # 0.60 - 0.50
    # gap > 0.40 on a second attempt (0.70 - 0.10), not on the first
    ("synthesis", 2, False, 0.20, False, (False, SEVERE)),
    ("synthesis", 2, False, 0.20, True, (False, SEVERE)),
    ("synthesis", 1, False, 0.20, False, (True, CONTRACT)),
    # a gap of exactly 0.40 is not severe (0.70 - 0.30)
    ("synthesis", 2, False, 0.60, False, (True, CONTRACT)),
    # a hard error retries before the contract is looked at
    ("synthesis", 1, False, 0.0, True, (True, ERROR)),
    ("recommendation", 2, False, 0.50, True, (True, ERROR)),  # gap 0.40: not severe
    # contract failed
    ("recommendation", 1, False, 0.90, False, (True, CONTRACT)),
    ("full_pipeline", 2, False, 0.70, False, (True, CONTRACT)),
    # low verifier score with the contract passed
    ("synthesis", 1, True, 0.10, False, (True, LOW)),
    ("full_pipeline", 2, True, 0.0, False, (True, LOW)),  # gap 0.20
])
def test_should_retry_follows_every_branch_of_the_seed(workflow, attempt, contract_passed, verifier, is_error,
                                                       expected):
    decision = RetryPolicy().should_retry(workflow_type=workflow, attempt=attempt, contract_passed=contract_passed,
                                          verifier_score=verifier, is_error=is_error)
    assert tuple(decision) == expected


def test_no_branch_applying_means_no_retry():
    # only reachable with edited settings: gap 0.15, contract passed, verifier above the low bar
    policy = RetryPolicy(settings={"chat": RetrySettings(max_attempts=3, good_enough_score=0.90,
                                                         low_quality_threshold=0.10)})
    assert policy.should_retry(workflow_type="chat", attempt=1, contract_passed=True, verifier_score=0.50) == (
        False, "No retry criterion met")


def test_the_seeds_settings_per_workflow():
    policy = RetryPolicy()
    table = {name: (s.max_attempts, s.good_enough_score, s.low_quality_threshold)
             for name in ("synthesis", "full_pipeline", "chat", "recommendation", "drafting", "other", "unknown")
             for s in [policy.for_workflow(name)]}
    assert table == {
        "synthesis": (3, 0.70, 0.50), "full_pipeline": (3, 0.70, 0.50), "chat": (2, 0.60, 0.40),
        "recommendation": (3, 0.65, 0.50), "drafting": (3, 0.65, 0.50), "other": (3, 0.65, 0.50),
        "unknown": (3, 0.65, 0.50),
    }


def test_injected_settings_replace_only_their_rows():
    policy = RetryPolicy(settings={"synthesis": RetrySettings(max_attempts=1, good_enough_score=0.9,
                                                              low_quality_threshold=0.8)})
    assert policy.should_retry(workflow_type="synthesis", attempt=1, contract_passed=False,
                               verifier_score=0.0) == (False, MAX)
    assert policy.for_workflow("chat") == DEFAULT_RETRY_SETTINGS["chat"]
    # the default would call 0.85 sufficient; the edited bar of 0.9 does not
    assert RetryPolicy().should_retry(workflow_type="recommendation", attempt=1, contract_passed=True,
                                      verifier_score=0.7).retry is False
    edited = RetryPolicy(settings={"recommendation": RetrySettings(3, 0.99, 0.8)})
    assert edited.should_retry(workflow_type="recommendation", attempt=1, contract_passed=True,
                               verifier_score=0.7) == (True, LOW)


def test_combined_score_is_the_mean_of_contract_and_verifier():
    assert combined_score(contract_passed=True, verifier_score=0.4) == 0.7
    assert combined_score(contract_passed=False, verifier_score=0.9) == 0.45


def test_healing_prompt_is_the_seeds_exact_format():
    prompt = FailureAnalyzer.build_healing_prompt(
        original_query="Synthesise what the interviews say about pricing",
        attempt=2, max_attempts=3,
        contract_issues=["Insufficient insights: 1 created (minimum 3)", "Citations required but none found"],
        verifier_issues=["Claims about market size lack source attribution"],
        verifier_feedback="Good analysis but synthesis requires direct quotes...")
    assert prompt == (
        "Synthesise what the interviews say about pricing\n"
        "[SELF-CORRECTION: Attempt 2 of 3]\n"
        "Your previous response had quality issues that must be corrected:\n"
        "MISSING REQUIREMENT: Insufficient insights: 1 created (minimum 3)\n"
        "MISSING REQUIREMENT: Citations required but none found\n"
        "QUALITY ISSUE: Claims about market size lack source attribution\n"
        "Reviewer feedback: Good analysis but synthesis requires direct quotes...\n"
        "Produce a complete response that fully addresses ALL items above.")


def test_healing_prompt_without_feedback_has_no_reviewer_line():
    prompt = FailureAnalyzer.build_healing_prompt(original_query="q", attempt=3, max_attempts=3,
                                                  contract_issues=["Output too short: 42 chars (minimum 100)"])
    assert prompt == ("q\n[SELF-CORRECTION: Attempt 3 of 3]\n"
                      "Your previous response had quality issues that must be corrected:\n"
                      "MISSING REQUIREMENT: Output too short: 42 chars (minimum 100)\n"
                      "Produce a complete response that fully addresses ALL items above.")
