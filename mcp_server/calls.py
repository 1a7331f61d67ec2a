"""A tool's call made the way REST makes it: the caller's role checked by the rule of the REST view the
tool mirrors (fathom.auth.role_needed), input validated by that view's serializer, and any error the
API would answer turned into an MCP tool error (a resource error, reading a resource) carrying the API's
message, never a crash of the session."""

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.serializers.json import DjangoJSONEncoder
from django.db import close_old_connections
from mcp.server.mcpserver.exceptions import MCPServerError, ResourceError, ResourceNotFoundError, ToolError
from mcp_types import CallToolResult, TextContent

from fathom.api.errors import exception_handler
from fathom.auth import HasWorkspaceRole, KeyPrincipal, role_allows, role_needed
from fathom.errors import PermissionDeniedError
from mcp_server.callers import current_caller

logger = logging.getLogger(__name__)

SERVER_ERROR = "the server failed to answer; the error is logged"


def caller_allowed(view, method: str) -> KeyPrincipal:
    """The caller, if its role may make this call of `view` (REST's 403 otherwise)."""
    caller = current_caller()
    if not role_allows(caller.role, role_needed(view, method)):
        raise PermissionDeniedError(HasWorkspaceRole.message)
    return caller


@contextmanager
def api_errors(*, resource: bool = False) -> Iterator[None]:
    """Whatever REST answers with a 4xx is raised as a ToolError (a ResourceError, a
    ResourceNotFoundError for a 404, when reading a `resource`) with its message; anything else is
    logged and said as the API's 500 says it."""
    try:
        yield
    except MCPServerError:
        raise
    except Exception as exc:
        response = exception_handler(exc, {})
        if response is None:
            logger.error("an MCP call failed", exc_info=exc)
            message, status = SERVER_ERROR, 500
        else:
            message, status = response.data["error"]["message"], response.status_code
        if not resource:
            raise ToolError(message) from exc
        raise (ResourceNotFoundError if status == 404 else ResourceError)(message) from exc


@contextmanager
def api_call(view, method: str, *, resource: bool = False) -> Iterator[KeyPrincipal]:
    """The body of a synchronous tool or resource (run on a worker thread): the allowed caller, errors
    as `api_errors` says, the thread's database connection given back at the end."""
    with api_errors(resource=resource):
        try:
            yield caller_allowed(view, method)
        finally:
            close_old_connections()  # the worker thread's: no request ends it


def validated(serializer_class, data: dict) -> dict:
    """`data` through the REST view's input serializer (ValidationError, REST's 400, otherwise)."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def as_json(data) -> dict:
    """Serialised data as plain JSON values (datetimes, decimals and UUIDs as REST writes them)."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def tool_result(data: dict, text: str | None = None) -> CallToolResult:
    """`data` as the tool's structured content, and as text for clients that read only text (`text`
    when the data has a form a model reads better, such as a search's rendered recall)."""
    data = as_json(data)
    text = json.dumps(data, ensure_ascii=False, indent=1) if text is None else text
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)
