"""Routines: scheduled prompts minted from approved `routines` proposals.

Approval creates a `Routine` and its django-celery-beat `PeriodicTask` + `CrontabSchedule`; beat
sends `fires.routine_run` on the schedule, which records a `RoutineRun` and asks the fire starter
(settings.FATHOM_ROUTINE_FIRE_STARTER, provided by the harness) to start a fire with the prompt.
"""

import json
import logging
import zoneinfo
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from fathom.cron import cron_parse
from fathom.errors import ApplicationError
from fathom.transient import TRANSIENT_ERRORS
from proposals.models import Routine, RoutineRun, RoutineRunStatus

logger = logging.getLogger(__name__)

ROUTINE_TASK = "fires.routine_run"
# A tick that waited this long for a worker is dropped: the next tick comes anyway.
ROUTINE_EXPIRE_SECONDS = 3600

def timezone_check(name: str) -> str:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ApplicationError(f"timezone {name!r} is not a known IANA time zone", code="invalid_timezone") from None
    return name


def periodic_task_name(*, workspace, name: str) -> str:
    return f"routine:{workspace.slug}:{name}"


@transaction.atomic
def routine_create(*, workspace, name: str, schedule: str, prompt: str, route: str = "", timezone: str = "UTC",
                   proposal=None) -> Routine:
    """A routine and its beat entry. A name already used in the workspace is an error."""
    cron = cron_parse(schedule)
    timezone_check(timezone)
    if Routine.objects.filter(workspace=workspace, name=name).exists():
        raise ApplicationError(f"a routine named {name!r} exists already in this workspace", code="routine_exists")
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=cron.minute, hour=cron.hour, day_of_month=cron.day_of_month, month_of_year=cron.month_of_year,
        day_of_week=cron.day_of_week, timezone=timezone,
    )
    routine = Routine.objects.create(workspace=workspace, name=name, schedule=str(cron), timezone=timezone,
                                     prompt=prompt, route=route, proposal=proposal)
    task_name = periodic_task_name(workspace=workspace, name=name)
    PeriodicTask.objects.filter(name=task_name).delete()  # a leftover of a routine deleted in admin
    routine.periodic_task = PeriodicTask.objects.create(
        name=task_name,
        task=ROUTINE_TASK,
        crontab=crontab,
        kwargs=json.dumps({"routine_id": routine.pk}),
        queue="fires",
        expire_seconds=ROUTINE_EXPIRE_SECONDS,
        description=f"Routine {name!r} of workspace {workspace.slug}: starts a fire with its prompt "
                    f"on '{cron}' ({timezone}). Minted from proposal #{getattr(proposal, 'pk', '-')}.",
    )
    routine.save(update_fields=["periodic_task"])
    return routine


@transaction.atomic
def routine_delete(*, routine: Routine) -> None:
    """Delete the routine and its beat entry (its runs go with it)."""
    if routine.periodic_task_id:
        PeriodicTask.objects.filter(pk=routine.periodic_task_id).delete()
    routine.delete()


# --- Running -------------------------------------------------------------------------------------

def _fire_starter() -> Callable[..., str] | None:
    """settings.FATHOM_ROUTINE_FIRE_STARTER: "module.function(*, routine, run)" starting the fire of a
    routine run and returning a reference to what it started (proposals cannot import the harness,
    which provides it). Blank: runs are recorded only."""
    path = settings.FATHOM_ROUTINE_FIRE_STARTER
    return import_string(path) if path else None


def routine_run_start(*, routine_id: int, task_id: str | None = None) -> RoutineRun | None:
    """Record one tick of the routine and start its fire. The same beat task delivered twice
    records (and starts) one run. Returns None when the routine is gone."""
    routine = Routine.objects.select_related("workspace").filter(pk=routine_id).first()
    if routine is None:
        logger.warning("routine %s no longer exists; tick ignored", routine_id)
        return None
    with transaction.atomic():
        if task_id:
            run, created = RoutineRun.objects.get_or_create(
                task_id=task_id,
                defaults={"workspace": routine.workspace, "routine": routine, "prompt": routine.prompt,
                          "route": routine.route},
            )
            if not created:
                return run
        else:
            run = RoutineRun.objects.create(workspace=routine.workspace, routine=routine, prompt=routine.prompt,
                                            route=routine.route)
        starter = _fire_starter()
        if starter is None:
            return run
        try:
            with transaction.atomic():
                run.fire_ref = starter(routine=routine, run=run) or ""
            run.status = RoutineRunStatus.STARTED
        except TRANSIENT_ERRORS:  # the whole tick rolls back and the task retries it
            raise
        except Exception as exc:  # the run row says why; the next tick tries again
            logger.exception("routine %s: starting its fire failed", routine.pk)
            run.status, run.error = RoutineRunStatus.FAILED, f"{type(exc).__name__}: {exc}"
        run.save(update_fields=["status", "fire_ref", "error"])
    return run
