"""One exception handler for the whole API: every error is
{"error": {"code", "message", "details"}} with the right status."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from fathom.errors import ApplicationError


def error_response(code: str, message: str, details=None, status_code: int = 400, headers=None) -> Response:
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return Response(body, status=status_code, headers=headers)


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return error_response(exc.code, exc.message, exc.details, exc.status_code)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(detail=exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    if isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
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
