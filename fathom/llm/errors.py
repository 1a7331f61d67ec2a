"""Every way a model call fails, as a typed error carrying the provider's own message.

`retryable` says whether the retry loop may try again (timeouts, connection errors, 429, 5xx, an
answer with neither text nor a tool call);
400/401/403/404 never are. They are `ApplicationError`s, so an API view that lets one through
answers with the error shape and a 5xx/4xx status instead of a bare 500."""

from fathom.errors import ApplicationError


class LLMError(ApplicationError):
    status_code = 502
    code = "llm_error"
    retryable = False

    def __init__(self, message: str, *, provider: str = "", model: str = "", http_status: int | None = None,
                 request_id: str | None = None, retry_after: float | None = None, attempts: int = 1):
        details = {"provider": provider, "model": model}
        if http_status is not None:
            details["http_status"] = http_status
        if request_id:
            details["request_id"] = request_id
        super().__init__(message, details=details)
        self.provider = provider
        self.model = model
        self.http_status = http_status
        self.request_id = request_id
        self.retry_after = retry_after
        self.attempts = attempts


class LLMNotConfigured(LLMError):
    """The role's model cannot be used as configured (unknown provider, no key, bad base URL)."""

    status_code = 503
    code = "llm_not_configured"


class LLMTimeout(LLMError):
    status_code = 504
    code = "llm_timeout"
    retryable = True


class LLMConnectionError(LLMError):
    code = "llm_connection_error"
    retryable = True


class LLMRateLimited(LLMError):
    """429: the provider asks us to slow down; `retry_after` (seconds) when it said how long."""

    status_code = 503
    code = "llm_rate_limited"
    retryable = True


class LLMServerError(LLMError):
    """5xx from the provider."""

    code = "llm_server_error"
    retryable = True


class LLMEmptyCompletion(LLMServerError):
    """The provider answered with neither text nor a tool call: a failed call, retried like a 5xx, and
    raised once the retry policy is spent. Never an answer to act on."""

    code = "llm_empty_completion"


class LLMBadRequest(LLMError):
    """400/422: the request itself is wrong (too long a context, a bad schema); never retried."""

    code = "llm_bad_request"


class LLMAuthenticationError(LLMError):
    """401: the key is missing, wrong or revoked; never retried."""

    code = "llm_authentication_failed"


class LLMPermissionDenied(LLMError):
    """403; never retried."""

    code = "llm_permission_denied"


class LLMModelNotFound(LLMError):
    """404: no such model (or endpoint) at the provider; never retried."""

    code = "llm_model_not_found"


class LLMDeadlineExceeded(LLMError):
    """Retries ran out of time or attempts; the message is the last attempt's error."""

    status_code = 504
    code = "llm_deadline_exceeded"


class LLMStreamInterrupted(LLMError):
    """A streamed answer broke after it had started; never retried (the caller saw part of it)."""

    code = "llm_stream_interrupted"


class LLMBudgetExceeded(LLMError):
    """The trace has made as many model calls as it may (FATHOM_LLM_MAX_CALLS_PER_TRACE in all, or
    FATHOM_LLM_MAX_CALLS_PER_ROLE for this role); the call was not made. Never retried: the same
    trace asking again is refused again."""

    status_code = 429
    code = "budget_exceeded"

    def __init__(self, message: str, *, trace_id: str, role: str, scope: str, limit: int, **kwargs):
        super().__init__(message, **kwargs)
        self.details.update(trace_id=trace_id, role=role, scope=scope, limit=limit)


class ScriptExhausted(LLMError):
    """The scripted provider was called with nothing queued for it (a test forgot a reply)."""

    status_code = 500
    code = "llm_script_exhausted"


def error_for_status(status: int | None) -> type[LLMError]:
    """The error class for an HTTP status from a provider."""
    if status is None:
        return LLMConnectionError
    if status == 429:
        return LLMRateLimited
    if status == 401:
        return LLMAuthenticationError
    if status == 403:
        return LLMPermissionDenied
    if status == 404:
        return LLMModelNotFound
    if status == 408:
        return LLMTimeout
    if status == 409 or status >= 500:  # 409: the provider's lock timed out; its SDKs retry it too
        return LLMServerError
    return LLMBadRequest
