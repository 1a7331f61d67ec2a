"""Retrying a model call: timeouts, connection errors, 429, 5xx and empty completions are tried again
after an exponential backoff with jitter (or exactly the provider's Retry-After when it sent one),
within a maximum number of attempts and a total deadline. Errors that retrying cannot fix (400, 401, 403,
404) fail at once. When attempts run out the last error is raised as it is (with `.attempts`);
when the deadline cuts the loop short, `LLMDeadlineExceeded` carries the last error's message."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from django.conf import settings

from fathom.llm.errors import LLMDeadlineExceeded, LLMError


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int
    deadline_seconds: float
    backoff_seconds: float
    max_backoff_seconds: float

    @classmethod
    def from_options(cls, options: dict) -> RetryPolicy:
        """The deployment's policy, overridden per call by the options `max_attempts` and `deadline`."""
        return cls(
            max_attempts=max(1, int(options.pop("max_attempts", settings.FATHOM_LLM_MAX_ATTEMPTS))),
            deadline_seconds=float(options.pop("deadline", settings.FATHOM_LLM_DEADLINE_SECONDS)),
            backoff_seconds=settings.FATHOM_LLM_BACKOFF_SECONDS,
            max_backoff_seconds=settings.FATHOM_LLM_MAX_BACKOFF_SECONDS,
        )

    def delay(self, attempt: int, error: LLMError) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        if error.retry_after is not None:
            return max(0.0, float(error.retry_after))
        ceiling = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (attempt - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)  # "equal jitter": never ~0, never in lockstep


class Attempts:
    """Drives the attempt loop of one call:

        attempts = Attempts(policy, timeout=model.timeout_seconds)
        while True:
            try:
                return provider.complete(request, timeout=attempts.timeout())
            except LLMError as exc:
                attempts.failed(exc)   # sleeps, or raises when this error may not be retried
    """

    def __init__(self, policy: RetryPolicy, *, timeout: float, on_retry=None, sleep=time.sleep):
        self.policy = policy
        self.per_attempt_timeout = timeout
        self.number = 1
        self.started = time.monotonic()
        self.on_retry = on_retry
        self.sleep = sleep

    def remaining(self) -> float:
        return self.policy.deadline_seconds - (time.monotonic() - self.started)

    def timeout(self) -> float:
        """This attempt's timeout: the model's, cut to what is left of the deadline."""
        return max(0.05, min(self.per_attempt_timeout, self.remaining()))

    def failed(self, error: LLMError) -> None:
        error.attempts = self.number
        if not error.retryable:
            raise error
        if self.number >= self.policy.max_attempts:
            raise error  # the last attempt's own error; `attempts` says how many were made
        wait = self.policy.delay(self.number, error)
        if wait >= self.remaining():
            raise _gave_up(error, f"after {self.number} attempts: the next would start past the "
                                  f"{self.policy.deadline_seconds:g}s deadline")
        if self.on_retry is not None:
            self.on_retry(attempt=self.number, wait=wait, error=error)
        self.sleep(wait)
        self.number += 1


def _gave_up(error: LLMError, why: str) -> LLMDeadlineExceeded:
    exc = LLMDeadlineExceeded(f"{error.message} (gave up {why})", provider=error.provider, model=error.model,
                              http_status=error.http_status, request_id=error.request_id,
                              attempts=error.attempts)
    exc.last_error = error
    exc.__cause__ = error
    return exc
