"""A fire's journal as the loop holds it: each committed model turn with the results of its tool
calls recorded so far. It is read from the database once, when a fire starts or resumes; after that
the loop adds what it commits, so a turn never reads back rows it has just written."""

from dataclasses import dataclass, field

from harness.fires.models import Fire, FireToolCall, FireTurn


@dataclass
class JournalTurn:
    turn: FireTurn
    results: dict[str, FireToolCall] = field(default_factory=dict)  # by call id


def journal_read(*, fire: Fire, phase: str) -> list[JournalTurn]:
    """The fire's committed turns of `phase`, oldest first, each with its recorded tool results."""
    turns = FireTurn.objects.filter(fire=fire, phase=phase).order_by("number").prefetch_related("calls")
    return [JournalTurn(turn, {call.call_id: call for call in turn.calls.all()}) for turn in turns]
