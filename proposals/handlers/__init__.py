"""The handler registry: tool name -> what a proposal of that tool may carry and what approving it
does. Other apps add tools with `register(MyHandler())` in their AppConfig.ready().

A handler validates payloads (`clean`: raises ApplicationError naming the field) and executes an
approved payload (`execute`: returns a reference to what it produced, raises on failure). Execution
runs inside the decision's transaction, in a savepoint: when it raises, whatever it wrote is rolled
back and the proposal is marked failed with the reason.
"""

from typing import ClassVar

from django.utils.html import format_html
from rest_framework import serializers

from fathom.errors import ApplicationError

_HANDLERS: dict[str, "ProposalHandler"] = {}


class ProposalHandler:
    tool: ClassVar[str]
    # The payload's shape; `clean` runs it and then `check` for what needs the database.
    payload_serializer: ClassVar[type[serializers.Serializer]]
    # Whether proposals of this tool carry a level (and so may pass the auto-approve gate).
    has_level: ClassVar[bool] = False
    auto_approve_by_level: ClassVar[bool] = False

    def clean(self, *, workspace, payload, check: bool = True) -> dict:
        """The validated payload, or ApplicationError naming the first bad field. With `check`, also
        the checks against the current state."""
        if not isinstance(payload, dict):
            raise ApplicationError("payload must be a JSON object", code="invalid_payload")
        serializer = self.payload_serializer(data=payload)
        if not serializer.is_valid():
            field, messages = next(iter(serializer.errors.items()))
            message = _first(messages)
            raise ApplicationError(f"payload.{field}: {message}", code="invalid_payload",
                                   details={"payload": serializer.errors})
        cleaned = _plain(serializer.validated_data)
        if check:
            self.check(workspace=workspace, payload=cleaned)
        return cleaned

    def check(self, *, workspace, payload: dict) -> None:
        """Checks against the current state (a name taken, a host unknown). Refuses a draft; at
        approval, a failed check fails the proposal with its message."""

    def level_of(self, payload: dict) -> int | None:
        return payload.get("level") if self.has_level else None

    def execute(self, *, proposal, payload: dict, decided_by: str) -> str:
        raise NotImplementedError

    def render_html(self, *, proposal, payload: dict) -> str:
        """A readable view of the payload for the admin (escaped HTML)."""
        return format_html("")


def register(handler: ProposalHandler) -> ProposalHandler:
    _HANDLERS[handler.tool] = handler
    return handler


def unregister(tool: str) -> None:
    _HANDLERS.pop(tool, None)


def get_handler(tool: str) -> ProposalHandler:
    try:
        return _HANDLERS[tool]
    except KeyError:
        raise ApplicationError(f"unknown tool {tool!r}; registered tools: {', '.join(registered_tools())}",
                               code="unknown_tool") from None


def registered_tools() -> list[str]:
    return sorted(_HANDLERS)


def _first(messages) -> str:
    if isinstance(messages, dict):
        key, value = next(iter(messages.items()))
        return f"{key}: {_first(value)}"
    if isinstance(messages, list) and messages:
        return _first(messages[0]) if isinstance(messages[0], (dict, list)) else str(messages[0])
    return str(messages)


def _plain(value):
    """validated_data as plain JSON types (OrderedDicts and the like become dicts and lists)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
