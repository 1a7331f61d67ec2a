"""How a session turn becomes a fire (kept as the runtime's plug-in point)."""

from harness.fires.services import fire_turn_work

__all__ = ["fire_turn_work"]
