"""The harness's tables, defined in its parts and gathered here for Django."""

from harness.autonomy.models import (  # noqa: F401
    AutonomyDecision,
    AutonomySettings,
    InboxMark,
    PressureSample,
    ProducerRun,  # noqa: F401
)
from harness.conductor.models import (  # noqa: F401
    AgendaItem,
    CapabilityCall,
    ConductorSettings,
    Decision,
    Run,
    RunEvent,
)
from harness.fires.models import Fire, FireToolCall, FireTurn  # noqa: F401
from harness.quality.models import (  # noqa: F401
    Feedback,
    QualityAttempt,
    QualityPrompt,
    QualityRetryPolicy,
    QualityRun,
    QualitySettings,
)
from harness.runtime.models import (  # noqa: F401
    AgentProfile,
    HarnessSettings,
    ProfileFieldVersion,
    Session,
    SessionEvent,
    SessionSchedule,
    Task,
    TaskSlots,
    Trigger,
    Turn,
    UserProfile,
)
