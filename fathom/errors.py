class ApplicationError(Exception):
    """A domain error with a message for the caller; the API turns it into a 4xx response."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, details: dict | None = None,
                 status_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.code = code or self.code
        self.details = details or {}
        self.status_code = status_code or self.status_code


class NotFoundError(ApplicationError):
    status_code = 404
    code = "not_found"


class PermissionDeniedError(ApplicationError):
    status_code = 403
    code = "permission_denied"


class ConflictError(ApplicationError):
    status_code = 409
    code = "conflict"


def idempotency_key_reused(key: str, *, what: str) -> ApplicationError:
    """The 422 for an Idempotency-Key sent again with a different request (`what`: "a different
    batch", "a different message"): the request is refused rather than answered with the first one."""
    return ApplicationError(f"this Idempotency-Key was used for {what}; use a new key",
                            code="idempotency_key_reused", status_code=422, details={"idempotency_key": key})
