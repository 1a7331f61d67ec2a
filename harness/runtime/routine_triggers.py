"""What a routine's tick starts in the harness (settings.FATHOM_ROUTINE_FIRE_STARTER)."""

from harness.runtime.models import Session, Trigger
from harness.runtime.services import session_create, trigger_enqueue


def routine_fire_start(*, routine, run) -> str:
    """Queue the routine's prompt as a Cron trigger on the session its route names (a session tag),
    or on the routine's own session when it has no route; that session's next turn fires over it,
    one turn at a time like any other trigger. A run queues its trigger once."""
    tag = routine.route or f"routine:{routine.name}"
    session = (Session.objects.filter(workspace=routine.workspace, tag=tag, status=Session.Status.OPEN)
               .order_by("created_at").first()
               or session_create(workspace=routine.workspace, tag=tag, title=f"Routine {routine.name}"))
    trigger = trigger_enqueue(session=session, kind=Trigger.Kind.CRON, content=routine.prompt, source="routine",
                              payload={"routine": routine.name, "run": run.pk},
                              idempotency_key=f"routine-run:{run.pk}")
    return f"trigger:{trigger.pk}"
