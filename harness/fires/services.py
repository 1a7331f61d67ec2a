"""State changes of fires: create (recorded as accepted before any model call), run under a claim,
cancel; and the turn work that makes a session turn a fire."""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from fathom import outbox
from fathom.errors import ApplicationError
from fathom.transient import TRANSIENT_ERRORS
from harness.fires.hooks import Park
from harness.fires.loop import run_threaded_fire
from harness.fires.models import Fire
from harness.runtime import claims
from harness.runtime.models import HarnessSettings, Trigger, Turn
from harness.runtime.services import (
    TurnCancelled,
    TurnParked,
    TurnSnapshot,
    harness_settings_get,
    message_mark_addressed,
    session_tick,
)

logger = logging.getLogger(__name__)


def fire_create(*, workspace, mode: str, question: str = "", messages: list[dict] | None = None, session=None,
                turn=None, parent=None, disabled_tools=(), spawned_by: str = "") -> Fire:
    """Record a fire as accepted. `messages` is its work set ({id?, content, author?, source?});
    a question alone becomes one message. A fire spawned by a tool call (`spawned_by` = its
    idempotency key) is created once: the same key returns the same fire."""
    if mode not in Fire.Mode.values:
        raise ApplicationError(f"mode must be one of {', '.join(Fire.Mode.values)}")
    messages = messages or [{"id": None, "content": question}]
    if not any(m.get("content", "").strip() for m in messages):
        raise ApplicationError("a fire needs a question")
    if spawned_by:
        existing = Fire.objects.filter(spawned_by=spawned_by).first()
        if existing is not None:
            return existing
    try:
        with transaction.atomic():
            return Fire.objects.create(
                workspace=workspace, mode=mode, session=session, turn=turn, parent=parent,
                depth=parent.depth + 1 if parent else 0, spawned_by=spawned_by,
                question=question or "\n\n".join(m["content"] for m in messages),
                work_set={"messages": messages}, disabled_tools=sorted(set(disabled_tools)),
            )
    except IntegrityError:
        if spawned_by:
            return Fire.objects.get(spawned_by=spawned_by)
        raise


def fire_run(*, fire_id=None, fire: Fire | None = None, limits: HarnessSettings | None = None) -> Fire:
    """Run or resume the fire if nobody else does; returns it as it stands afterwards (unfinished
    when it waits for a lifecycle hook's work). A transient error (fathom.transient) is raised, the
    fire left to resume, once its claim is given back. `fire` (loaded with its session and workspace)
    and `limits` spare reading them again."""
    if fire is None:
        fire = Fire.objects.select_related("session", "workspace").get(pk=fire_id)
    fire_advance(fire=fire, limits=limits)
    return fire


def fire_advance(*, fire: Fire, limits: HarnessSettings | None = None, claimed: bool = False) -> Park | None:
    """Run or resume the fire as far as it goes now, if nobody else does (`claimed`: the caller took
    its claim already): the Park of the hook it waits for, else None (it ended, or another runner has
    it). Failures are recorded on the fire, transient errors raised, as fire_run says."""
    if fire.is_terminal:
        return None
    limits = limits or harness_settings_get(workspace_id=fire.workspace_id)
    if not claimed and not claims.claim(Fire, fire.pk, stale_after=limits.stale_after_seconds):
        return None
    try:
        return run_threaded_fire(fire, limits=limits)
    except (claims.ClaimLost, *TRANSIENT_ERRORS):
        raise  # the fire is not over: another runner has it, or the retried task resumes it
    except Exception:  # noqa: BLE001 - recorded on the fire (failed, with its error); callers read that
        logger.exception("fire %s failed", fire.pk)
        return None
    finally:
        claims.release(Fire, fire.pk)


def fire_enqueue(*, fire: Fire) -> None:
    """Run the fire on a worker (fires queue) once the current transaction commits."""
    outbox.enqueue("fires.fire_run", args=[str(fire.pk)])


def fires_sweep() -> list:
    """Enqueue again every top-level fire outside a session turn (an asynchronous introspection)
    that is unfinished and has no live runner: its worker died, or its task was lost. Fires of a
    session turn are resumed by the session sweep. Run by beat."""
    swept = []
    orphans = Fire.objects.filter(status__in=[Fire.Status.ACCEPTED, Fire.Status.RUNNING], turn__isnull=True,
                                  parent__isnull=True)
    for fire in orphans.only("pk", "workspace_id", "runner", "runner_heartbeat_at", "created_at"):
        stale_after = harness_settings_get(workspace_id=fire.workspace_id).stale_after_seconds
        if claims.is_live(fire.runner, fire.runner_heartbeat_at, stale_after=stale_after):
            continue
        if not fire.runner and fire.created_at > timezone.now() - timedelta(seconds=stale_after):
            continue  # just accepted: its task is most likely still on its way to a worker
        fire_enqueue(fire=fire)
        swept.append(fire.pk)
    return swept


def fire_cancel(*, fire: Fire) -> Fire:
    """Ask a fire to stop before its next model call; a fire not started yet is cancelled at once."""
    if fire.is_terminal:
        return fire
    now = timezone.now()
    Fire.objects.filter(pk=fire.pk, cancel_requested_at__isnull=True).update(cancel_requested_at=now)
    Fire.objects.filter(pk=fire.pk, status=Fire.Status.ACCEPTED, runner="").update(
        status=Fire.Status.CANCELLED, stop_reason=Fire.StopReason.CANCELLED, phase=Fire.Phase.DONE, finished_at=now)
    fire.refresh_from_db()
    return fire


def fire_turn_work(snapshot: TurnSnapshot) -> None:
    """A session turn's work: one fire over the turn's messages (created once per turn), run inline
    on the tick's worker. Triggers other than messages (a task done, a heartbeat, a cron) are in its
    work set as notes of what happened, before the messages."""
    turn = snapshot.turn
    resumed = snapshot.resumed
    fire = resumed.fire if resumed else Fire.objects.select_related("session", "workspace").filter(turn=turn).first()
    if fire is None:
        others = [t for t in snapshot.triggers if not t.is_user_message and t.kind != Trigger.Kind.REFRESH_PROFILE]
        # What happened (a task's result, a heartbeat) first, the messages to answer last.
        messages = [{"id": None, "content": _note(t), "source": t.kind} for t in others]
        messages += [_message(t) for t in snapshot.messages]
        mode = Fire.Mode.SELF_DIRECTING if any(m.get("source") == "sit" for m in messages) else Fire.Mode.REACTIVE
        fire = fire_create(workspace=snapshot.session.workspace, mode=mode, messages=messages,
                           session=snapshot.session, turn=turn)
    park = fire_advance(fire=fire, limits=snapshot.limits, claimed=bool(resumed and resumed.claimed))
    if park is not None:
        raise TurnParked(f"fire {fire.pk} waits for its {park.waiting_for}")
    if fire.status == Fire.Status.CANCELLED:  # what was asked stays cancelled: it does not fire again
        for message in fire.work_set.get("messages", []):
            if message.get("id"):
                message_mark_addressed(session_id=fire.session_id, trigger_id=message["id"],
                                       note=f"cancelled with fire {fire.pk}")
        raise TurnCancelled(f"fire {fire.pk} was cancelled")
    if fire.status == Fire.Status.FAILED:
        raise RuntimeError(f"fire {fire.pk} failed: {fire.error}")


@dataclass(frozen=True)
class ParkedFire:
    """A parked fire on its way back: loaded with its session, workspace and turn; `claimed` when the
    read that found it took its claim too (its run need not claim it again)."""

    fire: Fire
    claimed: bool


def fire_parked_resume(*, session_id, workspace_id, fire_id) -> str:
    """The way back into a fire parked for a lifecycle hook once what it waited for has answered (the
    verifier's, the swarm's or the parallel subtasks' callback sends it): its session's tick, which
    goes straight to the fire rather than finding the turn, its triggers and its fire one by one.
    Anything else than an unfinished fire of the running turn takes the tick's usual way."""
    def parked(limits: HarnessSettings) -> TurnSnapshot | None:
        found = fire_parked_get(fire_id=fire_id, stale_after=limits.stale_after_seconds)
        if found is None:
            return None
        return TurnSnapshot(session=found.fire.session, turn=found.fire.turn, triggers=[], resumed=found)

    return session_tick(session_id=session_id, workspace_id=workspace_id, work=fire_turn_work, resume=parked)


def fire_parked_get(*, fire_id, stale_after: int) -> ParkedFire | None:
    """The fire `fire_id` if it is an unfinished fire of a running turn, claimed for this runner when
    nobody else holds it; None otherwise."""
    fire = (Fire.objects.select_related("session", "workspace", "turn")
            .filter(pk=fire_id, turn__status=Turn.Status.RUNNING).exclude(status__in=Fire.TERMINAL).first())
    if fire is None:
        return None
    return ParkedFire(fire=fire, claimed=claims.claim(Fire, fire.pk, stale_after=stale_after))


def _message(trigger: Trigger) -> dict:
    message = {"id": str(trigger.pk), "content": trigger.content, "author": trigger.author, "source": trigger.source}
    if trigger.payload.get("sit"):
        message["sit"] = trigger.payload["sit"]
    if trigger.payload.get("iterations"):
        message["iterations"] = trigger.payload["iterations"]  # the quality harness's deep-synthesis iteration
    return message


def _note(trigger: Trigger) -> str:
    detail = trigger.content or ", ".join(f"{k}={v}" for k, v in trigger.payload.items())
    return f"[{trigger.get_kind_display()}] {detail}".strip()
