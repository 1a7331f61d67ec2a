"""Background tasks (seed 003's Task): one per model tool call of a background tool, run on a worker.

    Pending  --capacity free-->  Running  --runner returns-->  Succeeded | Failed
        \\________________cancel_______________\\_________________> Canceled

A task starts at once when its workspace and its session both have a free slot, else it stays
Pending; whoever frees a slot (a task that ends, a cancel) starts the oldest waiting ones next. A slot
is taken with a conditional UPDATE (`running < capacity`) on a per-scope counter row (TaskSlots), so
two finishing tasks never start more than the capacity; the counters move only together with the
task's state, in one transaction. Every transition emits TaskStateChanged on the session's stream,
and a task that ends re-enters its session as a TaskDone trigger carrying its result.

A worker that dies under a task is covered twice: Celery redelivers the message (acks_late,
reject_on_worker_lost) and the new run takes the task over from the dead runner, counting the
attempt; the beat sweep sends again the tasks nobody runs (a whole worker lost) and fails those past
their time limit. After `max_attempts` runs the task fails: it is never left Running."""

import logging
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from fathom import outbox
from fathom.errors import ApplicationError, ConflictError
from fathom.file_root import FileRootNotShared, file_root_verify
from fathom.transient import TRANSIENT_ERRORS
from harness.runtime import claims
from harness.runtime.events import event_emit
from harness.runtime.files import FileError
from harness.runtime.models import Session, SessionEvent, Task, TaskSlots, Trigger
from harness.runtime.runners import RUNNERS, TaskCanceled, TaskFailed
from harness.runtime.services import harness_settings_get, trigger_enqueue

logger = logging.getLogger(__name__)
State = Task.State
TIME_LIMIT_GRACE_SECONDS = 30  # the hard limit after the soft one, and the sweep's margin past it
START_BATCH = 200  # waiting tasks looked at per start pass (oldest first)
RESULT_PREVIEW_CHARS = 500
FILE_TOOLS = ("fs_list", "fs_read", "fs_write", "fs_replace")  # they need the shared file root
REFUSED_RESEND_SECONDS = 5  # a file task refused by a worker without the shared root is sent again after


# --- creating, starting, finishing ------------------------------------------------------------------------

def task_create(*, session: Session, tool: str, arguments: dict, idempotency_key: str, fire=None,
                call_id: str = "", timeout_seconds: int | None = None) -> Task:
    """Record the task of one tool call, Pending, and start it at once if capacity is free. The same
    idempotency key returns the task it made the first time (a replayed tool call starts nothing)."""
    if tool not in RUNNERS:
        raise ApplicationError(f"{tool!r} is not a background tool; they are: {', '.join(RUNNERS)}")
    existing = Task.objects.filter(idempotency_key=idempotency_key).first()
    if existing is not None:
        return existing
    limits = harness_settings_get(workspace_id=session.workspace_id)
    timeout = timeout_seconds or limits.task_timeout_seconds
    try:
        with transaction.atomic():
            _session_lock(session.pk)
            task = Task.objects.create(
                workspace_id=session.workspace_id, session=session, fire=fire, call_id=call_id[:200],
                idempotency_key=idempotency_key, tool=tool, arguments=arguments, max_attempts=limits.task_max_attempts,
                timeout_seconds=max(int(timeout), 1))
            _emit(task, previous="")
            _slots_ensure(task)
            _start(task, limits)
    except IntegrityError:  # the same key, twice at once: the first one won
        return Task.objects.get(idempotency_key=idempotency_key)
    return task


def tasks_start_pending(*, workspace_id) -> int:
    """Start the workspace's waiting tasks, oldest first, while capacity is free (a session whose
    slots are full is passed over). Called by whatever frees a slot; returns how many started."""
    limits = harness_settings_get(workspace_id=workspace_id)
    started = 0
    waiting = Task.objects.filter(workspace_id=workspace_id, state=State.PENDING).order_by("created_at", "id")
    for task in waiting[:START_BATCH]:
        with transaction.atomic():
            outcome = _start(task, limits)
        if outcome == "workspace full":
            break
        started += outcome == "started"
    return started


def task_execute(*, task_id) -> str:
    """Run a Running task on this worker (the Celery task's body). Guarded by the task's claim, so a
    redelivered message or a second copy is harmless; a run that finds the task taken over from a
    dead runner counts an attempt, and fails the task past `max_attempts`."""
    task = Task.objects.select_related("workspace", "session").filter(pk=task_id).first()
    if task is None or task.state != State.RUNNING:
        return "skipped"
    if task.tool in FILE_TOOLS and (refusal := _file_root_refusal(task)):
        return refusal
    limits = harness_settings_get(workspace_id=task.workspace_id)
    if not claims.claim(Task, task.pk, stale_after=limits.stale_after_seconds):
        return "busy"
    try:
        if not Task.objects.filter(pk=task.pk, state=State.RUNNING).update(attempts=F("attempts") + 1,
                                                                             picked_at=timezone.now()):
            return "skipped"
        task.refresh_from_db(fields=["attempts", "picked_at", "state"])
        if task.attempts > task.max_attempts:
            _finish(task, State.FAILED, error=f"ran {task.attempts - 1} time(s) without finishing: its worker died")
            return "failed"
        try:
            state, result, error = _run(task)
        except claims.ClaimLost:
            return "taken over"
        if state is None:
            return "canceled"
        _finish(task, state, result=result, error=error)
        return state
    finally:
        claims.release(Task, task.pk)


def task_cancel(*, task: Task, by: str = "api") -> Task:
    """Cancel a task that has not ended: Pending or Running, it is Canceled at once (a running
    runner's result is then discarded; writes check before they land). An ended task is returned
    as it is."""
    now = timezone.now()
    with transaction.atomic():
        _session_lock(task.session_id)
        for previous in (State.PENDING, State.RUNNING):
            if Task.objects.filter(pk=task.pk, state=previous).update(
                    state=State.CANCELED, finished_at=now, cancel_requested_by=by[:200], runner="",
                    runner_heartbeat_at=None):
                task.refresh_from_db()
                if previous == State.RUNNING:
                    _slots_give(task)
                _emit(task, previous=previous)
                _task_done_enqueue(task)
                break
    if task.state == State.CANCELED:
        tasks_start_pending(workspace_id=task.workspace_id)
    task.refresh_from_db()
    return task


def tasks_sweep() -> dict:
    """Run by beat: fail Running tasks past their time limit, send again those nobody runs (their
    worker died, or their message was lost), and start waiting tasks where capacity is free (a
    finisher that died between its two commits). Returns what it did, by id."""
    now, done = timezone.now(), {"timed_out": [], "resent": [], "started": 0}
    settings_by_workspace = {}
    for task in Task.objects.filter(state=State.RUNNING).only(
            "pk", "workspace_id", "session_id", "runner", "runner_heartbeat_at", "started_at", "picked_at",
            "timeout_seconds", "tool", "attempts", "max_attempts"):
        limits = settings_by_workspace.setdefault(task.workspace_id,
                                                  harness_settings_get(workspace_id=task.workspace_id))
        if task.picked_at and now > task.picked_at + timedelta(seconds=task.timeout_seconds + TIME_LIMIT_GRACE_SECONDS):
            if _finish(task, State.FAILED, error=f"timed out after {task.timeout_seconds} s"):
                done["timed_out"].append(task.pk)
            continue
        if claims.is_live(task.runner, task.runner_heartbeat_at, stale_after=limits.stale_after_seconds):
            continue
        if not task.runner and task.started_at and task.started_at > now - timedelta(
                seconds=limits.stale_after_seconds):
            continue  # dispatched a moment ago: its message is most likely on its way
        _dispatch(task)
        done["resent"].append(task.pk)
    for workspace_id in Task.objects.filter(state=State.PENDING).values_list("workspace_id", flat=True).distinct():
        done["started"] += tasks_start_pending(workspace_id=workspace_id)
    return done


# --- internals ---------------------------------------------------------------------------------------------

class _NoCapacity(Exception):
    """Rolls back the savepoint of a start that could not take every slot it needs."""


def _start(task: Task, limits) -> str:
    """Take a workspace slot and a session slot and move the task Pending -> Running, or change
    nothing. Returns "started", "workspace full", "session full" or "gone" (not Pending any more)."""
    try:
        with transaction.atomic():
            _session_lock(task.session_id)
            if not _slot_take(f"workspace:{task.workspace_id}", limits.task_capacity_workspace):
                raise _NoCapacity("workspace full")
            if not _slot_take(f"session:{task.session_id}", limits.task_capacity_session):
                raise _NoCapacity("session full")
            now = timezone.now()
            if not Task.objects.filter(pk=task.pk, state=State.PENDING).update(state=State.RUNNING, started_at=now):
                raise _NoCapacity("gone")
            task.state, task.started_at = State.RUNNING, now
            _emit(task, previous=State.PENDING)
    except _NoCapacity as refused:
        return str(refused)
    _dispatch(task)
    return "started"


def _finish(task: Task, state: str, *, result: str = "", error: str = "") -> bool:
    """Running -> `state`, giving its slots back, then start what waits. False when the task was not
    Running any more (canceled meanwhile: its result is discarded)."""
    with transaction.atomic():
        _session_lock(task.session_id)
        if not Task.objects.filter(pk=task.pk, state=State.RUNNING).update(
                state=state, result=result, error=error[:4000], finished_at=timezone.now(), runner="",
                runner_heartbeat_at=None):
            return False
        task.refresh_from_db()
        _slots_give(task)
        _emit(task, previous=State.RUNNING)
        _task_done_enqueue(task)
    tasks_start_pending(workspace_id=task.workspace_id)
    return True


def _run(task: Task) -> tuple[str | None, str, str]:
    try:
        return State.SUCCEEDED, RUNNERS[task.tool](task), ""
    except TaskCanceled:
        return None, "", ""
    except (FileError, TaskFailed) as exc:
        return State.FAILED, "", str(exc)
    except SoftTimeLimitExceeded:
        return State.FAILED, "", f"timed out after {task.timeout_seconds} s"
    except (claims.ClaimLost, *TRANSIENT_ERRORS):
        raise  # another run has it, or the retried Celery task runs it again
    except Exception as exc:  # noqa: BLE001 - any failure of the work fails the task, reported
        logger.exception("task %s (%s) raised", task.pk, task.tool)
        return State.FAILED, "", f"{type(exc).__name__}: {exc}"


def _session_lock(session_id) -> None:
    """Every transaction that moves a task or its slots locks the task's session row first, then
    the workspace's slots, the session's slots, the task: one order for all, so none deadlocks
    (the session's events take that row's lock anyway)."""
    list(Session.objects.select_for_update(no_key=True).filter(pk=session_id).values_list("pk", flat=True))


def _slots_ensure(task: Task) -> None:
    TaskSlots.objects.bulk_create([TaskSlots(scope=f"workspace:{task.workspace_id}"),
                                   TaskSlots(scope=f"session:{task.session_id}")], ignore_conflicts=True)


def _slot_take(scope: str, capacity: int) -> bool:
    return bool(TaskSlots.objects.filter(scope=scope, running__lt=capacity).update(running=F("running") + 1))


def _slots_give(task: Task) -> None:
    # Workspace first, then session: the order every transaction takes them in (see _session_lock).
    for scope in (f"workspace:{task.workspace_id}", f"session:{task.session_id}"):
        TaskSlots.objects.filter(scope=scope, running__gt=0).update(running=F("running") - 1)


def _dispatch(task: Task, *, countdown: float = 0) -> None:
    """Run the task on a worker, under its own time limits, once the current transaction commits."""
    outbox.enqueue("fires.task_run", args=[str(task.pk)], soft_time_limit=task.timeout_seconds,
                   time_limit=task.timeout_seconds + TIME_LIMIT_GRACE_SECONDS, countdown=countdown)


def _file_root_refusal(task: Task) -> str:
    """A file task on a worker whose file root is not the shared one is refused, not run: sent
    again for a worker that has it, and failed with the reason once its time limit has passed
    without one taking it. "" when this worker may run it."""
    try:
        file_root_verify()
    except FileRootNotShared as exc:
        if task.started_at and timezone.now() > task.started_at + timedelta(seconds=task.timeout_seconds):
            _finish(task, State.FAILED, error=str(exc))
            return "failed"
        logger.error("refused file task %s (%s): %s", task.pk, task.tool, exc)
        _dispatch(task, countdown=REFUSED_RESEND_SECONDS)
        return "refused"
    return ""


def _emit(task: Task, *, previous: str) -> None:
    data = {"task_id": str(task.pk), "tool": task.tool, "state": task.state, "previous": previous or None,
            "call_id": task.call_id, "fire_id": str(task.fire_id) if task.fire_id else None,
            "attempts": task.attempts}
    if task.error:
        data["error"] = task.error[:RESULT_PREVIEW_CHARS]
    if task.result:
        data["result_preview"] = task.result[:RESULT_PREVIEW_CHARS]
    event_emit(session_id=task.session_id, workspace_id=task.workspace_id, kind=SessionEvent.Kind.TASK_STATE_CHANGED,
               data=data)


def _task_done_enqueue(task: Task) -> None:
    session = Session.objects.get(pk=task.session_id)
    outcome = task.result if task.state == State.SUCCEEDED else (task.error or f"canceled by {task.cancel_requested_by}")
    try:
        trigger_enqueue(session=session, kind=Trigger.Kind.TASK_DONE, source="task",
                        content=f"task {task.pk} {task_label(task)} {task.get_state_display()}:\n{outcome}",
                        payload={"task_id": str(task.pk), "tool": task.tool, "state": task.state,
                                 "call_id": task.call_id, "error": task.error},
                        idempotency_key=f"task-done:{task.pk}")
    except ConflictError:
        pass  # the session is closed: nobody is left to tell


def task_label(task: Task) -> str:
    """The task as a call, for people and models: `fs_read(fs://notes/todo.md)`."""
    target = task.arguments.get("path") or task.arguments.get("note") or ""
    return f"{task.tool}({target})"
