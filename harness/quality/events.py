"""How the quality harness speaks: every harness event is kept on its QualityRun (GET /v1/fires/{id}
shows them) and sent on the fire's session stream as `event: <name>`; and how what a fire waits for
hands it back: a tick of its session."""

import json

from celery import signature
from django.db import connection, transaction
from django.utils import timezone

from harness.fires.models import Fire
from harness.quality.models import QualityRun
from harness.runtime import claims
from harness.runtime.events import event_emit


def emit(fire: Fire, run: QualityRun, name: str, data: dict, *, runner: bool = True) -> None:
    """A harness event: kept on the run (GET /v1/fires/{id} shows them) and sent on the fire's session
    stream as `event: <name>`. `runner`: the caller holds the fire's session (its heartbeat too)."""
    data = {"fire_id": str(fire.pk), **data}
    with transaction.atomic(savepoint=False):
        with connection.cursor() as cursor:
            cursor.execute("UPDATE harness_qualityrun SET events = events || %s::jsonb WHERE id = %s",
                           [_json([{"event": name, "at": timezone.now().isoformat(), "data": data}]), run.pk])
        if fire.session_id:
            event_emit(session_id=fire.session_id, workspace_id=fire.workspace_id, kind=name, data=data,
                       turn=fire.turn, runner=claims.runner_id() if runner else "")


def fire_resume(fire: Fire) -> None:
    """Tick the fire's session once the current transaction commits: its turn resumes the fire."""
    session_id = fire.session_id
    transaction.on_commit(lambda: signature("fires.session_tick").delay(str(session_id)))


def _json(value) -> str:
    return json.dumps(value, default=str)
