"""State changes of the runtime: sessions, triggers, and the session tick that runs one turn.

The tick is the heart (seed 003's session actor, made multi-worker): claim the session in the
database, snapshot the queued triggers into a turn, run the turn's work, end the turn, release the
claim, and tick again if work is left (triggers that queued meanwhile, user messages left
unaddressed). Any number of workers may tick the same session; only the claimant works."""

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from fathom import outbox
from fathom.errors import ApplicationError, ConflictError, NotFoundError, idempotency_key_reused
from fathom.selectors import uuid_or_none
from fathom.transient import TRANSIENT_ERRORS
from harness.runtime import claims
from harness.runtime.events import event_emit
from harness.runtime.models import HarnessSettings, Session, SessionEvent, Trigger, Turn
from harness.runtime.profiles import agent_profile_default, agent_profile_get, profile_copy, user_profile_get
from lake.models import STRUCTURAL_PREFIXES

logger = logging.getLogger(__name__)
Event = SessionEvent.Kind


# --- settings -----------------------------------------------------------------------------------------

def harness_settings_get(*, workspace_id) -> HarnessSettings:
    """The workspace's thresholds (a row with the defaults is created on first use). Read raw: every
    tick reads them, and the ORM's building of the query costs more than the query."""
    found = next(iter(HarnessSettings.objects.raw(
        f"SELECT * FROM {HarnessSettings._meta.db_table} WHERE workspace_id = %s", [workspace_id])), None)
    return found if found is not None else HarnessSettings.objects.get_or_create(workspace_id=workspace_id)[0]


# --- sessions and triggers ------------------------------------------------------------------------------

@transaction.atomic
def session_create(*, workspace, agent: str = "", user: str = "", tag: str = "", title: str = "") -> Session:
    """Open a session holding copies of the agent profile (the workspace default unless named)
    and of the user profile (if named). `tag` is the river; a new one is made when omitted."""
    agent_profile = agent_profile_get(workspace=workspace, slug=agent) if agent else agent_profile_default(
        workspace=workspace)
    user_profile = user_profile_get(workspace=workspace, slug=user) if user else None
    session_id = uuid.uuid4()
    tag = tag.strip() or f"session:{session_id.hex[:12]}"
    if len(tag) > 100 or any(ch.isspace() for ch in tag):
        raise ApplicationError("tag must be at most 100 characters without spaces", details={"field": "tag"})
    if tag.startswith(STRUCTURAL_PREFIXES):
        # Every delta the session writes carries its tag: "kind:directive" made each answer a directive.
        raise ApplicationError(f"tag {tag!r} begins with one of {', '.join(STRUCTURAL_PREFIXES)}, which the lake "
                               "reads as what a delta is; name the river otherwise (project:apollo)",
                               details={"field": "tag"})
    return Session.objects.create(
        id=session_id, workspace=workspace, tag=tag, title=title, agent_profile=agent_profile,
        user_profile=user_profile, agent_profile_copy=profile_copy(agent_profile),
        user_profile_copy=profile_copy(user_profile), profiles_copied_at=timezone.now(),
    )


@dataclass(frozen=True)
class TriggerWrite:
    trigger: Trigger
    replayed: bool  # True when the idempotency key matched an earlier trigger: nothing new was queued


def message_send(*, session: Session, content: str, author: str = "", source: str = "api",
                 idempotency_key: str = "", payload: dict | None = None) -> Trigger:
    """Queue a user message; the session ticks after commit. See message_write for the idempotency key."""
    return message_write(session=session, content=content, author=author, source=source,
                         idempotency_key=idempotency_key, payload=payload).trigger


def message_write(*, session: Session, content: str, author: str = "", source: str = "api",
                  idempotency_key: str = "", payload: dict | None = None) -> TriggerWrite:
    """Queue a user message; the session ticks after commit. The same idempotency key with the same
    message returns the trigger it made the first time (replayed) instead of queuing it twice; the
    same key with a different message is refused (422 idempotency_key_reused), never dropped."""
    if not content.strip():
        raise ApplicationError("content must not be empty")
    written = trigger_write(session=session, kind=Trigger.Kind.USER_MESSAGE, content=content, author=author,
                            source=source, idempotency_key=idempotency_key, payload=payload)
    earlier = written.trigger
    if written.replayed and (earlier.kind, earlier.content, earlier.author, earlier.payload) != (
            Trigger.Kind.USER_MESSAGE, content, author, payload or {}):
        raise idempotency_key_reused(idempotency_key, what="a different message")
    return written


def trigger_enqueue(*, session: Session, kind: str, content: str = "", payload: dict | None = None,
                    source: str = "api", author: str = "", idempotency_key: str = "") -> Trigger:
    """Queue any trigger, record TriggerAccepted, and tick the session once committed. The same
    idempotency key returns the trigger it made the first time."""
    return trigger_write(session=session, kind=kind, content=content, payload=payload, source=source,
                         author=author, idempotency_key=idempotency_key).trigger


def trigger_write(*, session: Session, kind: str, content: str = "", payload: dict | None = None,
                  source: str = "api", author: str = "", idempotency_key: str = "") -> TriggerWrite:
    """trigger_enqueue, saying whether the idempotency key found an earlier trigger (returned as it is)."""
    if kind not in Trigger.Kind.values:
        raise ApplicationError(f"kind must be one of {', '.join(Trigger.Kind.values)}")
    if session.status != Session.Status.OPEN:
        raise ConflictError("the session is closed")
    if idempotency_key:
        earlier = Trigger.objects.filter(session=session, idempotency_key=idempotency_key).first()
        if earlier is not None:
            return TriggerWrite(trigger=earlier, replayed=True)
    try:
        with transaction.atomic():
            trigger = Trigger.objects.create(
                workspace_id=session.workspace_id, session=session, kind=kind, content=content,
                payload=payload or {}, source=source, author=author, idempotency_key=idempotency_key,
            )
            event_emit(session_id=session.pk, workspace_id=session.workspace_id, kind=Event.TRIGGER_ACCEPTED,
                       data=_trigger_data(trigger))
            session_tick_enqueue(session_id=session.pk)
    except IntegrityError:
        if idempotency_key:  # the same key, sent twice at once: the first one won
            return TriggerWrite(trigger=Trigger.objects.get(session=session, idempotency_key=idempotency_key),
                                replayed=True)
        raise
    return TriggerWrite(trigger=trigger, replayed=False)


def message_withdraw(*, session_id, trigger_id, note: str = "") -> bool:
    """Take back a user message no turn has taken yet: it is consumed and addressed with `note`, and no
    turn answers it. False when a turn has taken it already (its fire is the one to cancel). Under the
    session's lock, as a turn's start takes its messages, so the two cannot both have it."""
    with transaction.atomic():
        Session.objects.select_for_update(no_key=True).filter(pk=session_id).first()
        withdrawn = Trigger.objects.filter(session_id=session_id, pk=uuid_or_none(trigger_id),
                                           kind=Trigger.Kind.USER_MESSAGE, state=Trigger.State.QUEUED).update(
            state=Trigger.State.CONSUMED, addressed=True, addressed_note=note, addressed_at=timezone.now())
    return bool(withdrawn)


def message_mark_addressed(*, session_id, trigger_id, note: str = "") -> Trigger:
    """Tick a user message off the unaddressed list (the mark_addressed tool). Idempotent."""
    trigger = Trigger.objects.filter(session_id=session_id, pk=uuid_or_none(trigger_id),
                                     kind=Trigger.Kind.USER_MESSAGE).first()
    if trigger is None:
        raise NotFoundError(f"no user message {trigger_id} in this session")
    if not trigger.addressed:
        trigger.addressed, trigger.addressed_note, trigger.addressed_at = True, note, timezone.now()
        trigger.save(update_fields=["addressed", "addressed_note", "addressed_at"])
    return trigger


def session_tick_enqueue(*, session_id, countdown: float = 0) -> None:
    """Tick the session on a worker once the current transaction commits."""
    outbox.enqueue("fires.session_tick", args=[str(session_id)], countdown=countdown or None)


# --- the tick -----------------------------------------------------------------------------------------

@dataclass
class TurnSnapshot:
    """What one turn works on: the triggers it snapshotted, and earlier user messages that are
    still unaddressed (taken up again)."""

    session: Session
    turn: Turn
    triggers: list[Trigger]
    refired: list[Trigger] = field(default_factory=list)
    limits: HarnessSettings | None = None  # the workspace's thresholds, as the tick read them
    resumed: object = None  # the turn's work under way, as the tick's `resume` loaded it (its triggers unread)

    @property
    def messages(self) -> list[Trigger]:
        """Every user message this turn must address, oldest first."""
        fresh = [t for t in self.triggers if t.is_user_message]
        return sorted(self.refired + fresh, key=lambda t: (t.created_at, str(t.id)))


TurnWork = Callable[[TurnSnapshot], None]


class TurnParked(Exception):
    """Raised by a turn's work that waits for other tasks (the quality harness's verifier group): the
    turn stays running, the session is released, and whoever the work waits for ticks it again."""


class TurnCancelled(Exception):
    """Raised by a turn's work that was cancelled (its fire): the turn ends `cancelled`, and its
    TurnEnded event says so, so a stream's client can tell it from an answered turn."""


def session_tick(*, session_id, work: TurnWork, resume: Callable[[HarnessSettings], TurnSnapshot | None] | None = None,
                 workspace_id=None) -> str:
    """Run at most one turn of the session, if there is work and nobody else runs one: `work` does
    the turn (the harness's is a fire: harness.fires.services.fire_turn_work). Returns "busy" (another
    runner holds the session), "idle" (nothing to do), "ended", "failed", "cancelled" (its work was) or
    "parked" (the turn's work waits for other tasks, which tick the session again).

    A turn left running by a runner that died is resumed with its original snapshot. `resume` (with
    the session's `workspace_id`) is the lean way back into a running turn for a caller that knows its
    work (a fire parked for the quality worker, ticked by the verifier's callback): called once the
    session is claimed (with the workspace's HarnessSettings), it loads that work in one go, or gives None
    for the usual way."""
    session = None
    if workspace_id is None:
        session = Session.objects.filter(pk=session_id).first()
        if session is None:
            return "gone"
        workspace_id = session.workspace_id
    limits = harness_settings_get(workspace_id=workspace_id)
    if not claims.claim(Session, session_id, stale_after=limits.stale_after_seconds):
        return "busy"
    outcome = "idle"
    try:
        snapshot = resume(limits) if resume is not None else None
        if snapshot is not None:
            session = snapshot.session
        else:
            session = session or Session.objects.get(pk=session_id)
            turn = Turn.objects.filter(session=session, status=Turn.Status.RUNNING).first()
            snapshot = _snapshot_of(turn, session) if turn else _turn_begin(session, limits)
        if snapshot is not None:
            outcome = _turn_run(snapshot, work, limits)
    finally:
        claims.release(Session, session_id, then=lambda: session_tick_enqueue(session_id=session_id))
    if outcome != "parked":  # a parked turn is ticked again by what it waits for
        _tick_again_if_needed(session, limits)
    return outcome


def sessions_sweep(*, stale_after: int | None = None) -> list:
    """Tick every session that has work but no live runner: queued triggers nobody ticked (a lost
    message), user messages due to fire again, turns whose runner died (silent for `stale_after`
    seconds, or a process of this host that no longer exists). Run by beat."""
    candidates = (
        Session.objects.filter(status=Session.Status.OPEN)
        .filter(Q(triggers__state=Trigger.State.QUEUED) | Q(turns__status=Turn.Status.RUNNING)
                | Q(triggers__kind=Trigger.Kind.USER_MESSAGE, triggers__state=Trigger.State.CONSUMED,
                    triggers__addressed=False, triggers__given_up_at__isnull=True))
        .distinct().values_list("pk", "workspace_id", "runner", "runner_heartbeat_at")
    )
    ticked = []
    for pk, workspace_id, runner, heartbeat_at in candidates:
        limit = stale_after if stale_after is not None else harness_settings_get(
            workspace_id=workspace_id).stale_after_seconds
        if claims.is_live(runner, heartbeat_at, stale_after=limit):
            continue
        session_tick_enqueue(session_id=pk)
        ticked.append(pk)
    return ticked


# --- turn internals --------------------------------------------------------------------------------------

def _turn_begin(session: Session, limits: HarnessSettings) -> TurnSnapshot | None:
    with transaction.atomic():
        session = Session.objects.select_for_update(no_key=True).get(pk=session.pk)
        queued = list(Trigger.objects.filter(session=session, state=Trigger.State.QUEUED).select_for_update())
        refired = list(_unaddressed(session).select_for_update())
        if not queued and not refired:
            return None
        session.turn_count += 1
        session.save(update_fields=["turn_count", "updated_at"])
        turn = Turn.objects.create(workspace_id=session.workspace_id, session=session, number=session.turn_count,
                                   refired_ids=[str(t.pk) for t in refired], runner=claims.runner_id())
        Trigger.objects.filter(pk__in=[t.pk for t in queued]).update(state=Trigger.State.SNAPSHOTTED, turn=turn)
        Trigger.objects.filter(pk__in=[t.pk for t in refired]).update(refires=F("refires") + 1)
        _emit(turn, Event.TURN_STARTED, {"turn": turn.number, "trigger_ids": [str(t.pk) for t in queued],
                                         "refired_ids": turn.refired_ids})
        if any(t.kind == Trigger.Kind.REFRESH_PROFILE for t in queued):
            _profiles_recopy(session, turn)
    return _snapshot_of(turn)


def _turn_run(snapshot: TurnSnapshot, work: TurnWork, limits: HarnessSettings) -> str:
    turn, snapshot.limits = snapshot.turn, limits
    if not _has_work(snapshot):
        _turn_close(turn, limits, status=Turn.Status.ENDED)
        return "ended"
    try:
        work(snapshot)
    except TurnParked:
        return "parked"
    except TurnCancelled:
        _turn_close(turn, limits, status=Turn.Status.CANCELLED)
        return "cancelled"
    except (claims.ClaimLost, *TRANSIENT_ERRORS):
        raise  # another runner took the session over, or the retried tick resumes the turn
    except Exception as exc:  # noqa: BLE001 - any failure of the work ends the turn as failed, reported
        logger.exception("turn %s of session %s failed", turn.number, turn.session_id)
        _turn_close(turn, limits, status=Turn.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        return "failed"
    _turn_close(turn, limits, status=Turn.Status.ENDED)
    return "ended"


@transaction.atomic
def _turn_close(turn: Turn, limits: HarnessSettings, *, status: str, error: str = "") -> None:
    Session.objects.select_for_update(no_key=True).filter(pk=turn.session_id).first()
    Trigger.objects.filter(turn=turn, state=Trigger.State.SNAPSHOTTED).update(state=Trigger.State.CONSUMED)
    mine = Q(turn=turn) | Q(pk__in=turn.refired_ids)
    unaddressed = list(
        Trigger.objects.filter(mine, kind=Trigger.Kind.USER_MESSAGE, addressed=False, given_up_at__isnull=True)
        .values_list("pk", "refires")
    )
    given_up = [pk for pk, refires in unaddressed if refires >= limits.refire_cap]
    Trigger.objects.filter(pk__in=given_up).update(given_up_at=timezone.now())
    turn.status, turn.error, turn.ended_at = status, error[:4000], timezone.now()
    turn.save(update_fields=["status", "error", "ended_at"])
    data = {"turn": turn.number, "status": status,
            "unaddressed_ids": [str(pk) for pk, _ in unaddressed if pk not in given_up],
            "given_up_ids": [str(pk) for pk in given_up]}
    if status == Turn.Status.FAILED:
        _emit(turn, Event.TURN_FAILURE, {**data, "error": turn.error})
    else:
        _emit(turn, Event.TURN_ENDED, data)


def _tick_again_if_needed(session: Session, limits: HarnessSettings) -> None:
    # Checked after the claim is released: a trigger queued while we held it found us busy, so
    # it is ours to pass on.
    if Trigger.objects.filter(session=session, state=Trigger.State.QUEUED).exists():
        session_tick_enqueue(session_id=session.pk)
    elif _unaddressed(session).exists():
        session_tick_enqueue(session_id=session.pk, countdown=limits.refire_delay_seconds)


def _unaddressed(session: Session):
    return Trigger.objects.filter(session=session, kind=Trigger.Kind.USER_MESSAGE, state=Trigger.State.CONSUMED,
                                  addressed=False, given_up_at__isnull=True)


def _snapshot_of(turn: Turn, session: Session | None = None) -> TurnSnapshot:
    triggers = list(Trigger.objects.filter(turn=turn))
    refired = list(Trigger.objects.filter(pk__in=turn.refired_ids)) if turn.refired_ids else []
    return TurnSnapshot(session=session or turn.session, turn=turn, triggers=triggers, refired=refired)


def _has_work(snapshot: TurnSnapshot) -> bool:
    return (snapshot.resumed is not None or bool(snapshot.refired)
            or any(t.kind != Trigger.Kind.REFRESH_PROFILE for t in snapshot.triggers))


def _profiles_recopy(session: Session, turn: Turn) -> None:
    session.agent_profile_copy = profile_copy(session.agent_profile)
    session.user_profile_copy = profile_copy(session.user_profile)
    session.profiles_copied_at = timezone.now()
    session.save(update_fields=["agent_profile_copy", "user_profile_copy", "profiles_copied_at", "updated_at"])
    _emit(turn, Event.PROFILE_REFRESHED, {
        "agent": {"slug": session.agent_profile_copy.get("slug"), "version": session.agent_profile_copy.get("version")},
        "user": {"slug": session.user_profile_copy.get("slug"), "version": session.user_profile_copy.get("version")},
    })


def _emit(turn: Turn, kind: str, data: dict) -> SessionEvent:
    return event_emit(session_id=turn.session_id, workspace_id=turn.workspace_id, kind=kind, data=data, turn=turn)


def _trigger_data(trigger: Trigger) -> dict:
    data = {"trigger_id": str(trigger.pk), "kind": trigger.kind, "variant": trigger.get_kind_display(),
            "source": trigger.source, "author": trigger.author, "content": trigger.content}
    if trigger.kind == Trigger.Kind.TASK_DONE:
        data["task_id"] = (trigger.payload or {}).get("task_id")  # a client waiting on the task knows its news
    return data
