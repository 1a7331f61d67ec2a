"""The harness's tables, defined in its parts and gathered here for Django."""

from harness.runtime.models import (  # noqa: F401
    AgentProfile,
    HarnessSettings,
    Session,
    SessionEvent,
    Trigger,
    Turn,
    UserProfile,
)
