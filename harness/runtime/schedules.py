"""A session's heartbeat and cron schedules (seed 003's Heartbeat and Cron triggers).

Each SessionSchedule owns one django-celery-beat PeriodicTask (an IntervalSchedule for a heartbeat,
a CrontabSchedule for a cron), created and deleted with it. On each tick beat sends
`fires.session_schedule_tick`, which queues a Heartbeat or Cron trigger on the session; the
session's next turn consumes it like any other trigger. A tick whose schedule is gone (its session
was deleted) deletes its own beat entry, so an orphan ticks at most once."""

import json
import logging
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from fathom.cron import Cron, cron_parse
from fathom.errors import ApplicationError, ConflictError
from harness.runtime.models import Session, SessionSchedule, Trigger
from harness.runtime.services import trigger_enqueue
from proposals.scheduled_routines import timezone_check

logger = logging.getLogger(__name__)

TICK_TASK = "fires.session_schedule_tick"
# Every heartbeat tick wakes a fire (several model calls): a minute is the floor, the granularity of
# a cron schedule and the shortest time a tick waits for a worker (HEARTBEAT_MIN_EXPIRE_SECONDS).
MIN_EVERY_SECONDS = 60
MAX_EVERY_SECONDS = 366 * 24 * 3600
# A tick that waited this long for a worker is dropped (the next one comes): a heartbeat's after its
# interval, but never under a minute (ticks that queue up meanwhile are coalesced anyway); a cron's
# after an hour.
HEARTBEAT_MIN_EXPIRE_SECONDS = 60
CRON_EXPIRE_SECONDS = 3600


@dataclass(frozen=True)
class ScheduleSpec:
    """A schedule as validated: a heartbeat's interval, or a cron's parsed fields, and its time zone."""

    kind: str
    every_seconds: int | None
    cron: Cron | None
    timezone_name: str


def session_schedule_validate(*, kind: str, every_seconds: int | None = None, cron: str = "",
                              timezone_name: str = "UTC") -> ScheduleSpec:
    """The schedule these fields describe, or ApplicationError naming what is wrong."""
    if kind not in SessionSchedule.Kind.values:
        raise ApplicationError(f"kind must be one of {', '.join(SessionSchedule.Kind.values)}, got {kind!r}",
                               code="invalid_schedule")
    timezone_check(timezone_name)
    if kind == SessionSchedule.Kind.HEARTBEAT:
        if cron:
            raise ApplicationError("a heartbeat takes every_seconds, not cron", code="invalid_schedule")
        if not isinstance(every_seconds, int) or isinstance(every_seconds, bool) or not \
                MIN_EVERY_SECONDS <= every_seconds <= MAX_EVERY_SECONDS:
            raise ApplicationError(f"every_seconds must be a whole number from {MIN_EVERY_SECONDS} to "
                                   f"{MAX_EVERY_SECONDS}, got {every_seconds!r}", code="invalid_schedule",
                                   details={"field": "every_seconds", "minimum": MIN_EVERY_SECONDS,
                                            "maximum": MAX_EVERY_SECONDS})
        return ScheduleSpec(kind, every_seconds, None, timezone_name)
    if every_seconds is not None:
        raise ApplicationError("a cron schedule takes cron, not every_seconds", code="invalid_schedule")
    if not cron:
        raise ApplicationError("a cron schedule needs cron, e.g. '*/5 * * * *'", code="invalid_schedule")
    return ScheduleSpec(kind, None, cron_parse(cron), timezone_name)


@transaction.atomic
def session_schedule_create(*, session: Session, kind: str, every_seconds: int | None = None, cron: str = "",
                            timezone_name: str = "UTC", content: str = "") -> SessionSchedule:
    """A heartbeat (`every_seconds` from MIN_EVERY_SECONDS; one per session) or a cron schedule (`cron`, five fields or
    an @alias, in `timezone_name`) of the session, with its beat entry. Bad input is an
    ApplicationError naming the problem; a second heartbeat, or a closed session, a ConflictError."""
    spec = session_schedule_validate(kind=kind, every_seconds=every_seconds, cron=cron, timezone_name=timezone_name)
    if session.status != Session.Status.OPEN:
        raise ConflictError("the session is closed")
    schedule = _created(SessionSchedule(
        workspace_id=session.workspace_id, session=session, kind=kind, every_seconds=spec.every_seconds,
        cron=str(spec.cron) if spec.cron else "", timezone=timezone_name, content=content))
    if spec.cron is None:
        interval, _ = IntervalSchedule.objects.get_or_create(every=spec.every_seconds, period=IntervalSchedule.SECONDS)
        entry = {"interval": interval, "expire_seconds": max(spec.every_seconds, HEARTBEAT_MIN_EXPIRE_SECONDS)}
        when = f"every {spec.every_seconds} s"
    else:
        parsed = spec.cron
        crontab, _ = CrontabSchedule.objects.get_or_create(
            minute=parsed.minute, hour=parsed.hour, day_of_month=parsed.day_of_month,
            month_of_year=parsed.month_of_year, day_of_week=parsed.day_of_week, timezone=timezone_name)
        entry = {"crontab": crontab, "expire_seconds": CRON_EXPIRE_SECONDS}
        when = f"on '{parsed}' ({timezone_name})"
    schedule.periodic_task = PeriodicTask.objects.create(
        name=f"session-schedule:{schedule.pk}", task=TICK_TASK, kwargs=json.dumps({"schedule_id": str(schedule.pk)}),
        queue="fires", description=f"{schedule.get_kind_display()} of session {session.pk} "
                                   f"(workspace {session.workspace_id}): queues a {schedule.get_kind_display()} "
                                   f"trigger {when}. Deleted with the schedule.",
        **entry)
    schedule.save(update_fields=["periodic_task"])
    return schedule


@transaction.atomic
def session_schedule_delete(*, schedule: SessionSchedule) -> None:
    """Delete the schedule and its beat entry."""
    if schedule.periodic_task_id:
        PeriodicTask.objects.filter(pk=schedule.periodic_task_id).delete()
    schedule.delete()


@transaction.atomic
def session_delete(*, session: Session) -> None:
    """Delete a session with everything it owns, its schedules' beat entries included."""
    PeriodicTask.objects.filter(pk__in=session.schedules.values("periodic_task_id")).delete()
    session.delete()


def session_schedule_tick(*, schedule_id, task_id: str = "") -> Trigger | None:
    """One tick of a schedule: queue its trigger on the session (once per beat message: a redelivered
    one finds its trigger by `task_id`). A heartbeat whose previous trigger is still queued is
    coalesced into it. Returns the trigger, or None when nothing was queued."""
    schedule = SessionSchedule.objects.select_related("session").filter(pk=schedule_id).first()
    if schedule is None:
        deleted, _ = PeriodicTask.objects.filter(name=f"session-schedule:{schedule_id}").delete()
        logger.info("schedule %s no longer exists; its beat entry removed (%s)", schedule_id, deleted)
        return None
    session = schedule.session
    if session.status != Session.Status.OPEN:
        return None
    kind = Trigger.Kind.HEARTBEAT if schedule.kind == SessionSchedule.Kind.HEARTBEAT else Trigger.Kind.CRON
    if kind == Trigger.Kind.HEARTBEAT and Trigger.objects.filter(
            session=session, kind=kind, state=Trigger.State.QUEUED, payload__schedule_id=str(schedule.pk)).exists():
        return None
    SessionSchedule.objects.filter(pk=schedule.pk).update(last_fired_at=timezone.now())
    return trigger_enqueue(
        session=session, kind=kind, source="beat", content=schedule.content or _default_content(schedule),
        payload={"schedule_id": str(schedule.pk), "schedule": str(schedule)},
        idempotency_key=f"schedule-tick:{task_id}" if task_id else "")


def _created(schedule: SessionSchedule) -> SessionSchedule:
    try:
        with transaction.atomic():
            schedule.save()
    except IntegrityError:
        raise ConflictError("the session has a heartbeat already: delete it to set another interval") from None
    return schedule


def _default_content(schedule: SessionSchedule) -> str:
    if schedule.kind == SessionSchedule.Kind.HEARTBEAT:
        return f"Heartbeat (every {schedule.every_seconds} s): anything to do?"
    return f"Cron '{schedule.cron}' ({schedule.timezone})"
