"""Every error the API answers is {"error": {"code", "message", "details"}} with the right status:
DRF's exceptions through `exception_handler`, and what Django answers itself (a path no route
matches, a crash, a CSRF failure, a suspicious request) through the handlers `fathom.urls` and the
settings name. The admin keeps Django's HTML pages."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.views import csrf, defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from fathom.api.parsers import RequestTooLarge, body_too_large_message
from fathom.errors import ApplicationError

ADMIN_PREFIX = "/admin/"


def error_body(code: str, message: str, details=None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_response(code: str, message: str, details=None, status_code: int = 400, headers=None) -> Response:
    return Response(error_body(code, message, details), status=status_code, headers=headers)


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return error_response(exc.code, exc.message, exc.details, exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        exc = RequestTooLarge(body_too_large_message())
    if isinstance(exc, TooManyFieldsSent):
        exc = exceptions.ValidationError(str(exc))
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(detail=exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    if isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, SuspiciousOperation):
        exc = exceptions.ParseError(str(exc) or "bad request")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        message = _first_message(exc.detail) or "invalid input"
        details = exc.detail if isinstance(exc.detail, dict) else {"errors": exc.detail}
        return error_response("invalid", message, details, status.HTTP_400_BAD_REQUEST)
    code = exc.get_codes() if isinstance(exc, exceptions.APIException) else "error"
    message = str(exc.detail) if isinstance(exc, exceptions.APIException) else str(exc)
    headers = {k: v for k, v in response.items() if k in ("WWW-Authenticate", "Retry-After", "Allow")}
    return error_response(code if isinstance(code, str) else "error", message, {}, response.status_code, headers)


# --- Django's own error views (named in fathom.urls and settings.CSRF_FAILURE_VIEW) -----------------------

def json_error(status_code: int, code: str, message: str, details=None) -> JsonResponse:
    return JsonResponse(error_body(code, message, details), status=status_code)


def is_admin(request) -> bool:
    return request.path_info.startswith(ADMIN_PREFIX)


def bad_request(request, exception=None):
    if is_admin(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return json_error(413, "too_large", body_too_large_message())
    return json_error(400, "bad_request", str(exception or "") or "bad request")


def permission_denied(request, exception=None):
    if is_admin(request):
        return defaults.permission_denied(request, exception)
    return json_error(403, "permission_denied", str(exception or "") or "permission denied")


def page_not_found(request, exception=None):
    if is_admin(request):
        return defaults.page_not_found(request, exception)
    return json_error(404, "not_found", f"no endpoint or object at {request.path_info}")


def server_error(request):
    if is_admin(request):
        return defaults.server_error(request)
    return json_error(500, "server_error", "the server failed to answer; the error is logged")


def csrf_failure(request, reason=""):
    # The API's clients send keys, not cookies: a CSRF failure outside /v1/ is a browser's form (admin, dashboard).
    if is_admin(request) or not request.path_info.startswith("/v1/"):
        return csrf.csrf_failure(request, reason)
    return json_error(403, "csrf_failed", f"CSRF check failed: {reason}" if reason else "CSRF check failed")


def _first_message(detail, path: str = "") -> str:
    """'field: message' for the first error, following nested lists and dicts."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            found = _first_message(value, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            nested_path = f"{path}[{index}]" if isinstance(value, (dict, list)) else path
            found = _first_message(value, nested_path)
            if found:
                return found
    elif detail:
        return f"{path}: {detail}" if path and path != "non_field_errors" else str(detail)
    return ""
