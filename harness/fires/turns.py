"""How a session turn becomes a fire. Until the model layer is installed the turn only
acknowledges what it received, so the runtime can be exercised end to end."""

from harness.runtime.events import event_emit
from harness.runtime.models import SessionEvent
from harness.runtime.services import TurnSnapshot, message_mark_addressed


def fire_turn_work(snapshot: TurnSnapshot) -> None:
    messages = snapshot.messages
    text = f"received {len(messages)} message(s); the fire loop is not installed yet"
    event_emit(session_id=snapshot.session.pk, workspace_id=snapshot.session.workspace_id,
               kind=SessionEvent.Kind.ASSISTANT_OUTPUT, data={"body": text}, turn=snapshot.turn)
    for message in messages:
        message_mark_addressed(session_id=snapshot.session.pk, trigger_id=message.pk, note="acknowledged")
