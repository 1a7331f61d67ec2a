"""Autonomy's state changes: the settings (the switch), the beat sweep that samples pressure and
decides, the claim of a Sit's window, the Sit's start (focus pre-pass, then a self-directing Sit in
the workspace's autonomy session), and the operator's inbox marks.

The sweep decides for every workspace that is not switched off, in a bounded number of queries
each, and records the decision with its reason. A Sit is claimed by inserting its `sit` decision:
the unique constraint on (workspace, window) lets exactly one insert win, however many sweeps or
workers race; the loser records `window_taken`. The Sit itself starts in a task (the focus call is
a model call, which a sweep never waits on). The claim and the start are tied by the claim's
`sit_state`: a claim still `claimed` once its start has had its time (the sweep died before the
task was sent, the worker running it was killed) is queued again by a later sweep, and the start,
under the claim's row lock, makes the Sit's first message only for a claim still `claimed`: a window
gets its Sit however often its start is queued, and never two."""

import logging
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef, TextField, Value
from django.db.models.functions import Concat
from django.utils import timezone

from fathom import outbox
from fathom.cron import cron_parse
from fathom.errors import ApplicationError
from fathom.models import Workspace
from fathom.tracing import span
from harness.autonomy import schedules
from harness.autonomy.focus import focus_choose
from harness.autonomy.models import (
    AutonomyDecision,
    AutonomyMode,
    AutonomySettings,
    InboxMark,
    PressureSample,
    reason_in_words,
)
from harness.autonomy.pressure import SIGNAL_LABELS, SIGNAL_NAMES, Reading, pressure_read
from harness.autonomy.producers.services import producers_pressure_start
from harness.autonomy.selectors import inbox_item_get
from harness.runtime.models import Session, Trigger, Turn
from harness.runtime.services import message_send, session_create

logger = logging.getLogger(__name__)
Action = AutonomyDecision.Action
SitState = AutonomyDecision.SitState
AUTONOMY_SESSION_TAG = "autonomy"
SIT_START_TASK = "fires.autonomy_sit_start"
SIT_START_TIME_LIMIT = 180  # the start task's hard time limit: no attempt outlives it
# A claim still not started this long after its start was queued is queued again: by then the
# attempt is over (the task's hard limit has passed) or was never sent.
SIT_START_GRACE = timedelta(seconds=SIT_START_TIME_LIMIT + 60)
SIT_START_ATTEMPTS = 3  # then the claim is given up as lost
SETTINGS_FIELDS = ("mode", "threshold", "time_zone", "quiet_start", "quiet_end", "idle_minutes", "window_minutes",
                   "daily_sit_cap", "daily_token_cap", "sit_rounds", "series_hours", "cron",
                   *(f"weight_{name}" for name in SIGNAL_NAMES))


# --- settings --------------------------------------------------------------------------------------------

def autonomy_settings_get(*, workspace) -> AutonomySettings:
    """The workspace's autonomy settings (a row with the defaults, mode observe, is made on first use)."""
    workspace_id = getattr(workspace, "pk", workspace)
    return AutonomySettings.objects.get_or_create(workspace_id=workspace_id)[0]


@transaction.atomic
def autonomy_settings_update(*, workspace, **changes) -> AutonomySettings:
    """Change some settings, validated together (ApplicationError names the field); the cron
    schedule's beat entry follows the settings (made, changed, or removed with mode/cron)."""
    unknown = set(changes) - set(SETTINGS_FIELDS)
    if unknown:
        raise ApplicationError(f"unknown settings: {', '.join(sorted(unknown))}", details={"fields": sorted(unknown)})
    settings = AutonomySettings.objects.select_for_update().get(pk=autonomy_settings_get(workspace=workspace).pk)
    for name, value in changes.items():
        setattr(settings, name, value)
    autonomy_settings_validate(settings)
    settings.save()
    schedules.scheduled_sit_ensure(settings=settings, workspace=settings.workspace)
    return settings


def autonomy_settings_validate(settings: AutonomySettings) -> None:
    """The checks the database cannot make, for every writer (REST, CLI, admin)."""
    if settings.mode not in AutonomyMode.values:
        raise ApplicationError(f"mode must be one of {', '.join(AutonomyMode.values)}", details={"field": "mode"})
    if not 0 <= settings.threshold <= 1:
        raise ApplicationError("threshold must be between 0 and 1", details={"field": "threshold"})
    try:
        zoneinfo.ZoneInfo(settings.time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ApplicationError(f"time_zone {settings.time_zone!r} is not a known IANA time zone",
                               details={"field": "time_zone"}) from None
    if (settings.quiet_start is None) != (settings.quiet_end is None):
        raise ApplicationError("quiet hours need both quiet_start and quiet_end (or neither)",
                               details={"field": "quiet_start"})
    if settings.window_minutes < 1:
        raise ApplicationError("window_minutes must be at least 1", details={"field": "window_minutes"})
    if settings.sit_rounds < 1:
        raise ApplicationError("sit_rounds must be at least 1", details={"field": "sit_rounds"})
    for name in SIGNAL_NAMES:
        if getattr(settings, f"weight_{name}") < 0:
            raise ApplicationError(f"weight_{name} may not be negative", details={"field": f"weight_{name}"})
    if settings.cron:
        try:
            settings.cron = str(cron_parse(settings.cron))
        except ApplicationError as exc:
            raise ApplicationError(f"cron: {exc.message}", code=exc.code, details={"field": "cron"}) from None


# --- the sweep -------------------------------------------------------------------------------------------

@dataclass
class Gates:
    """Everything besides pressure that may hold a Sit back, read at one moment."""

    quiet: bool
    day_start: datetime
    window_start: datetime


@dataclass(frozen=True)
class Verdict:
    """A decision before it is recorded: its action, its reason, the reason in words (read at the
    sweep's moment) and, when a gate holds the Sit back, when that gate opens."""

    action: str
    reason: str
    detail: str
    opens_at: datetime | None = None

    @property
    def words(self) -> str:
        return reason_in_words(self.reason, self.detail)


# The skips that only wait for a gate opening by itself: the producer leaves the material to the Sit.
SIT_WAITING = ("not_idle", "quiet_hours")


def autonomy_sweep(*, now: datetime | None = None) -> dict:
    """Run by beat (every minute by default): for every workspace not switched off, sample its
    pressure into the series, decide (sit, would sit, skip, and why) and record the decision; claim
    and start a Sit where the switch is on and everything allows one. Returns counts by action."""
    now = now or timezone.now()
    _settings_ensure_all()
    sits_redrive(now=now)
    samples, decisions, counts = [], [], {action: 0 for action in Action.values}
    for settings in AutonomySettings.objects.exclude(mode=AutonomyMode.OFF).select_related("workspace"):
        decision, sample = autonomy_decide(settings=settings, now=now)
        samples.append(sample)
        if decision.pk is None:
            decisions.append(decision)
        counts[decision.action] += 1
    PressureSample.objects.bulk_create(samples)
    AutonomyDecision.objects.bulk_create(decisions)
    _prune(now)
    return counts


def autonomy_decide(*, settings: AutonomySettings, now: datetime | None = None,
                    scheduled: bool = False) -> tuple[AutonomyDecision, PressureSample]:
    """Read the workspace's pressure and decide. A `sit` decision is saved here (it is the window's
    claim) and its Sit queued after commit; any other decision is returned unsaved, for the caller
    to store (the sweep stores them all at once). `scheduled` (the cron Sit) skips the threshold.

    A Sit goes first: when un-provenanced material is full the topical producer is queued to name
    it, but not while a Sit is only waiting for a gate that opens by itself (the idle gate, quiet
    hours): the producer would drain the pressure that decided the Sit before the gate opens. The
    sweep that claims the Sit queues the producer with it (the Sit has taken its reading)."""
    now = now or timezone.now()
    gates = gates_read(settings=settings, now=now)
    reading = pressure_read(settings=settings, day_start=gates.day_start, now=now)
    sample = PressureSample(workspace_id=settings.workspace_id, value=reading.value, breakdown=reading.breakdown)
    verdict = _decision(settings, reading, gates, now=now, scheduled=scheduled)
    decision = AutonomyDecision(workspace_id=settings.workspace_id, mode=settings.mode, action=verdict.action,
                                reason=verdict.reason, detail=verdict.detail, opens_at=verdict.opens_at,
                                pressure=reading.value, breakdown=reading.breakdown,
                                window_start=gates.window_start, scheduled=scheduled)
    if verdict.action == Action.SIT:
        decision = _claim(decision, settings=settings, now=now)
    if (settings.mode == AutonomyMode.ON and not scheduled and decision.reason not in SIT_WAITING
            and reading.breakdown["unprovenanced"]["scaled"] >= 1
            and producers_pressure_start(workspace_id=settings.workspace_id, window_start=gates.window_start)):
        decision.detail += ("; un-provenanced material is full: a topical producer run was queued to name it "
                            f"(it lowers the pressure by up to {reading.breakdown['unprovenanced']['contribution']:.2f})")
        if decision.pk is not None:
            decision.save(update_fields=["detail"])
    return decision, sample


def autonomy_now(*, settings: AutonomySettings,
                 now: datetime | None = None) -> tuple[Verdict, Reading | None]:
    """What the sweep would decide if it ran now, and the reading it would decide on; nothing is
    written (the operator's view of "why is nothing happening")."""
    now = now or timezone.now()
    if settings.mode == AutonomyMode.OFF:
        return Verdict(Action.SKIP, "off", "autonomy is switched off: nothing is sampled or decided"), None
    gates = gates_read(settings=settings, now=now)
    reading = pressure_read(settings=settings, day_start=gates.day_start, now=now)
    verdict = _decision(settings, reading, gates, now=now, scheduled=False)
    if verdict.action == Action.SIT and AutonomyDecision.objects.filter(
            workspace_id=settings.workspace_id, action=Action.SIT, window_start=gates.window_start).exists():
        verdict = _window_taken(settings, gates.window_start, now=now)
    return verdict, reading


def gates_read(*, settings: AutonomySettings, now: datetime) -> Gates:
    zone = zoneinfo.ZoneInfo(settings.time_zone)
    local = now.astimezone(zone)
    day_start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    window = settings.window_minutes * 60
    window_start = datetime.fromtimestamp(now.timestamp() // window * window, tz=UTC)
    return Gates(quiet=in_quiet_hours(local.time(), settings.quiet_start, settings.quiet_end),
                 day_start=day_start, window_start=window_start)


def in_quiet_hours(moment: time, start: time | None, end: time | None) -> bool:
    """Whether a local time falls in [start, end), a range that may wrap midnight."""
    if start is None or end is None or start == end:
        return False
    if start < end:
        return start <= moment < end
    return moment >= start or moment < end


def _decision(settings: AutonomySettings, reading: Reading, gates: Gates, *, now: datetime,
              scheduled: bool) -> Verdict:
    last = reading.last_user_message_at
    top = SIGNAL_LABELS.get(reading.top_signal, reading.top_signal)
    if not scheduled and reading.value < settings.threshold:
        return Verdict(Action.SKIP, "below_threshold",
                       f"pressure {reading.value:.2f} < threshold {settings.threshold:.2f}; top signal: {top}")
    if gates.quiet:
        ends = _quiet_end_after(now, settings)
        return Verdict(Action.SKIP, "quiet_hours",
                       f"{settings.quiet_start:%H:%M}-{settings.quiet_end:%H:%M} in {settings.time_zone}; "
                       f"they end in {duration_words(ends - now)}", ends)
    if last is not None and now - last < timedelta(minutes=settings.idle_minutes):
        opens = last + timedelta(minutes=settings.idle_minutes)
        return Verdict(Action.SKIP, "not_idle",
                       f"last question {duration_words(now - last)} ago; it opens in {duration_words(opens - now)} "
                       f"({settings.idle_minutes} min after a question)", opens)
    tomorrow = gates.day_start + timedelta(days=1)
    if reading.sits_today >= settings.daily_sit_cap:
        return Verdict(Action.SKIP, "sit_cap", f"{reading.sits_today} of {settings.daily_sit_cap} autonomous Sits "
                                               f"today; the count starts again in {duration_words(tomorrow - now)}",
                       tomorrow)
    if reading.tokens_today >= settings.daily_token_cap:
        return Verdict(Action.SKIP, "token_cap", f"{reading.tokens_today} of {settings.daily_token_cap} tokens "
                                                 f"today; the count starts again in {duration_words(tomorrow - now)}",
                       tomorrow)
    if _sit_in_progress(settings):
        return Verdict(Action.SKIP, "sit_running", "the autonomy session is still working on a Sit")
    detail = ("scheduled" if scheduled else
              f"pressure {reading.value:.2f} >= threshold {settings.threshold:.2f}; top signal: {top}")
    if settings.mode == AutonomyMode.OBSERVE:
        return Verdict(Action.WOULD_SIT, "observe", detail + "; observe mode starts nothing")
    return Verdict(Action.SIT, "scheduled" if scheduled else "pressure", detail)


def _window_taken(settings: AutonomySettings, window_start: datetime, *, now: datetime) -> Verdict:
    opens = window_start + timedelta(minutes=settings.window_minutes)
    return Verdict(Action.SKIP, "window_taken",
                   f"an autonomous Sit started in this window ({window_start:%H:%M} UTC) already; the next "
                   f"window opens in {duration_words(opens - now)}", opens)


def _quiet_end_after(now: datetime, settings: AutonomySettings) -> datetime:
    local = now.astimezone(zoneinfo.ZoneInfo(settings.time_zone))
    end = local.replace(hour=settings.quiet_end.hour, minute=settings.quiet_end.minute, second=0, microsecond=0)
    return end if end > local else end + timedelta(days=1)


def duration_words(span: timedelta) -> str:
    """A span as an operator reads it: "under a minute", "4 min", "2 h 5 min"."""
    minutes = int(max(span.total_seconds(), 0) // 60)
    if minutes < 1:
        return "under a minute"
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def _sit_in_progress(settings: AutonomySettings) -> bool:
    if settings.session_id is None:
        return False
    return (Trigger.objects.filter(session_id=settings.session_id, state__in=[Trigger.State.QUEUED,
                                                                          Trigger.State.SNAPSHOTTED]).exists()
            or Turn.objects.filter(session_id=settings.session_id, status=Turn.Status.RUNNING).exists())


def _claim(decision: AutonomyDecision, *, settings: AutonomySettings, now: datetime) -> AutonomyDecision:
    """Insert the `sit` decision, the window's one claim, and queue the Sit's start after commit; a
    window already claimed turns the decision into a `window_taken` skip (returned unsaved)."""
    decision.sit_state, decision.start_queued_at, decision.start_attempts = SitState.CLAIMED, now, 1
    try:
        with transaction.atomic():
            decision.save()
            _sit_start_enqueue(decision.pk)
    except IntegrityError:
        verdict = _window_taken(settings, decision.window_start, now=now)
        decision.pk = None
        decision.sit_state, decision.start_queued_at, decision.start_attempts = "", None, 0
        decision.action, decision.reason, decision.detail = verdict.action, verdict.reason, verdict.detail
        decision.opens_at = verdict.opens_at
    return decision


def sits_redrive(*, now: datetime) -> int:
    """Queue again the start of every claimed Sit whose last start was queued more than
    SIT_START_GRACE ago and made nothing (its worker died, or the message was never sent); after
    SIT_START_ATTEMPTS the claim is marked lost instead. Each claim is taken by a conditional UPDATE
    on its last queue time, so sweeps that race queue it once. Returns how many were queued."""
    overdue = AutonomyDecision.objects.filter(sit_state=SitState.CLAIMED, start_queued_at__lt=now - SIT_START_GRACE)
    lost = overdue.filter(start_attempts__gte=SIT_START_ATTEMPTS).update(
        sit_state=SitState.LOST, detail=Concat(F("detail"), Value(f"; lost: none of {SIT_START_ATTEMPTS} attempts "
                                                                  "to start the Sit made its first message"),
                                                 output_field=TextField()))
    queued = 0
    for pk, queued_at in overdue.values_list("pk", "start_queued_at"):
        with transaction.atomic():
            if AutonomyDecision.objects.filter(pk=pk, sit_state=SitState.CLAIMED, start_queued_at=queued_at).update(
                    start_queued_at=now, start_attempts=F("start_attempts") + 1):
                _sit_start_enqueue(pk)
                queued += 1
    if lost or queued:
        logger.warning("autonomous Sits whose start died: %d queued again, %d given up as lost", queued, lost)
    return queued


def _sit_start_enqueue(decision_id: int) -> None:
    outbox.enqueue(SIT_START_TASK, args=[decision_id])


def _settings_ensure_all() -> None:
    missing = Workspace.objects.filter(~Exists(AutonomySettings.objects.filter(workspace=OuterRef("pk"))))
    AutonomySettings.objects.bulk_create([AutonomySettings(workspace=w) for w in missing.only("pk")],
                                         ignore_conflicts=True)


def _prune(now: datetime) -> None:
    """Samples and non-sit decisions older than their workspace's series window go (one query each)."""
    for model, extra in ((PressureSample, ""), (AutonomyDecision, " AND t.action <> 'sit'")):
        with connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {model._meta.db_table} t USING {AutonomySettings._meta.db_table} s "
                f"WHERE t.workspace_id = s.workspace_id "
                f"AND t.created_at < %s - s.series_hours * interval '1 hour'{extra}", [now])


# --- the Sit ---------------------------------------------------------------------------------------------

def autonomous_sit_start(*, decision_id: int) -> AutonomyDecision:
    """Start the claimed Sit: the focus pre-pass (one model call, or the deterministic fallback),
    then round 1 of a self-directing Sit in the workspace's autonomy session, with the focus as its
    prompt. Only for a claim still `claimed`, checked again under its row lock when the message is
    made: a start queued twice (redelivered, or queued again by the sweep) makes one Sit. The focus
    call's tokens are recorded as soon as it returns, so they count toward the daily token cap even
    when this attempt dies before the Sit starts."""
    decision = AutonomyDecision.objects.select_related("workspace").get(pk=decision_id)
    if decision.sit_state != SitState.CLAIMED:
        return decision
    settings = autonomy_settings_get(workspace=decision.workspace)
    with span("autonomy.sit", workspace=decision.workspace_id, actor_id=f"autonomy:{decision.pk}",
              pressure=decision.pressure, scheduled=decision.scheduled) as root:
        focus = focus_choose(workspace=decision.workspace, breakdown=decision.breakdown)
        root.set(focus_source=focus.source)
    if focus.tokens:
        AutonomyDecision.objects.filter(pk=decision_id).update(focus_tokens=F("focus_tokens") + focus.tokens)
    with transaction.atomic():
        decision = AutonomyDecision.objects.select_for_update().select_related("workspace").get(pk=decision_id)
        if decision.sit_state != SitState.CLAIMED:
            return decision
        session = autonomy_session_ensure(settings=settings)
        trigger = message_send(session=session, content=focus.text, author="self", source="sit",
                               idempotency_key=f"autonomy:{decision.pk}",
                               payload={"sit": {"round": 1, "cap": settings.sit_rounds,
                                                "autonomous": str(decision.pk)}})
        decision.focus, decision.focus_source, decision.focus_error = focus.text, focus.source, focus.error
        decision.session, decision.trigger, decision.sit_state = session, trigger, SitState.STARTED
        decision.save(update_fields=["focus", "focus_source", "focus_error", "session", "trigger", "sit_state"])
    return decision


def autonomy_session_ensure(*, settings: AutonomySettings) -> Session:
    """The workspace's autonomy session, where its autonomous Sits run (made when missing or closed)."""
    session = settings.session
    if session is None or session.status != Session.Status.OPEN:
        session = session_create(workspace=settings.workspace, tag=AUTONOMY_SESSION_TAG, title="Autonomous Sits")
        AutonomySettings.objects.filter(pk=settings.pk).update(session=session)
        settings.session = session
    return session


def scheduled_sit(*, workspace_id: int) -> AutonomyDecision | None:
    """The cron Sit (beat runs it on the workspace's schedule): decided like a pressure Sit but for
    the threshold, so quiet hours, idleness, caps and the window's claim still hold."""
    settings = AutonomySettings.objects.select_related("workspace").filter(workspace_id=workspace_id).first()
    if settings is None or settings.mode == AutonomyMode.OFF:
        return None
    decision, sample = autonomy_decide(settings=settings, scheduled=True)
    sample.save()
    if decision.pk is None:
        decision.save()
    return decision


# --- the inbox -------------------------------------------------------------------------------------------

INBOX_ACTIONS = {"acknowledge": InboxMark.State.ACKNOWLEDGED, "dismiss": InboxMark.State.DISMISSED,
                 "act": InboxMark.State.ACTED}


@transaction.atomic
def inbox_mark(*, workspace, delta_id: str, action: str, actor: str) -> InboxMark:
    """Acknowledge, dismiss or act on an inbox item. Acting queues a message on the item in the
    autonomy session (a fire, whose side-effecting tools still only draft proposals); acting twice
    starts one fire."""
    if action not in INBOX_ACTIONS:
        raise ApplicationError(f"action must be one of {', '.join(INBOX_ACTIONS)}", details={"field": "action"})
    delta = inbox_item_get(workspace=workspace, delta_id=delta_id)
    mark = InboxMark.objects.select_for_update().filter(workspace=workspace, delta_id=delta.pk).first()
    if mark is not None and mark.state == InboxMark.State.ACTED:
        return mark
    mark = mark or InboxMark(workspace=workspace, delta_id=delta.pk)
    mark.state, mark.actor = INBOX_ACTIONS[action], actor
    if action == "act":
        session = autonomy_session_ensure(settings=autonomy_settings_get(workspace=workspace))
        mark.trigger = message_send(session=session, author="operator", source="inbox",
                                    idempotency_key=f"inbox-act:{delta.pk}",
                                    content=f"Act on this, as you named it [{delta.pk}]:\n\n{delta.content}")
    mark.save()
    return mark

