"""Pressure: how much a workspace wants to sit, a number in [0, 1] with its breakdown.

Each signal is a raw reading scaled to [0, 1] (raw / saturation, capped at 1); the pressure is the
weighted mean of the scaled signals, with the workspace's weights (AutonomySettings.weight_<name>,
editable in admin). All the lake and harness readings come from one aggregate query whose parts are
bounded (counts stop at their saturation, windows are indexed), so a workspace with a large lake
reads as fast as a small one; pending conflicts come from Festinger's own selector."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from festinger.selectors import pending_count
from harness.autonomy.models import AutonomyDecision, AutonomySettings, InboxMark
from harness.autonomy.producers.services import OWN_SOURCES
from harness.fires.models import Fire
from harness.runtime.models import Session, Trigger
from lake.models import PROVENANCE_TAG, QA_MARKER_TAG, Delta

DIRECTIVE_TAG = "kind:directive"
MOOD_SHIFT_TAG = "kind:mood-shift"
SALIENT_HOURS = 24
MOOD_HOURS = 24
DORMANT_DAYS = 14
DORMANT_CANDIDATES = 40
MARKER_DAYS = 7


@dataclass(frozen=True)
class Signal:
    name: str
    meaning: str
    saturation: float  # the raw reading that counts as full pressure
    unit: str = ""
    label: str = ""  # its name for an operator


SIGNALS = (
    Signal("unprovenanced", "deltas written since the newest provenance of level 1 or more (the harness's own "
           "writes not counted): material waiting to be named", 30, "deltas", "un-provenanced material"),
    Signal("directives", "kind:directive deltas the operator has neither acted on nor dismissed", 5, "directives", "open directives"),
    Signal("since_sit", "hours since the last Sit (any self-directing fire); a workspace that never sat counts as "
           "full", 24, "hours", "time since the last Sit"),
    Signal("salient_threads", f"open sessions active in the last {SALIENT_HOURS} hours", 5, "sessions",
           "active conversations"),
    Signal("mood_shift", f"the summed magnitude of kind:mood-shift deltas in the last {MOOD_HOURS} hours", 0.6, "", "mood shift"),
    Signal("dormant_patterns", f"provenances (level >= 1) older than {DORMANT_DAYS} days that nothing cited or "
           f"extended since (of the newest {DORMANT_CANDIDATES})", 10, "provenances", "dormant patterns"),
    Signal("pending_conflicts", "Festinger conflicts waiting for resolution", 10, "conflicts", "pending conflicts"),
    Signal("duplicate_markers", f"Q/A markers of the last {MARKER_DAYS} days that repeat an earlier marker's "
           "question and no provenance wraps yet (the hourly dedup folds them)", 5, "markers", "repeated questions"),
)
SIGNAL_NAMES = tuple(s.name for s in SIGNALS)
SIGNAL_LABELS = {s.name: s.label for s in SIGNALS}


@dataclass
class Reading:
    """One pressure reading, with what the sweep's gates need besides."""

    value: float
    breakdown: dict
    at: datetime
    last_user_message_at: datetime | None = None
    sits_today: int = 0
    tokens_today: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def top_signal(self) -> str:
        return max(self.breakdown, key=lambda name: self.breakdown[name]["contribution"], default="")


def weights_of(settings: AutonomySettings) -> dict[str, float]:
    return {name: max(0.0, float(getattr(settings, f"weight_{name}"))) for name in SIGNAL_NAMES}


def pressure_read(*, settings: AutonomySettings, day_start: datetime, now: datetime | None = None) -> Reading:
    """The workspace's pressure now, in two queries (the lake and harness aggregate, Festinger's count)."""
    now = now or timezone.now()
    raw, gates = _aggregate(settings, now=now, day_start=day_start)
    raw["pending_conflicts"] = pending_count(workspace=settings.workspace_id)
    weights = weights_of(settings)
    total_weight = sum(weights.values())
    breakdown = {}
    value = 0.0
    for signal in SIGNALS:
        scaled = min(1.0, max(0.0, raw[signal.name] / signal.saturation))
        share = weights[signal.name] / total_weight if total_weight else 0.0
        breakdown[signal.name] = {"raw": round(raw[signal.name], 3), "scaled": round(scaled, 3),
                                  "weight": weights[signal.name], "contribution": round(scaled * share, 4)}
        value += scaled * share
    return Reading(value=round(min(1.0, value), 4), breakdown=breakdown, at=now, **gates)


def _aggregate(settings: AutonomySettings, *, now: datetime, day_start: datetime) -> tuple[dict, dict]:
    delta, fire, session = Delta._meta.db_table, Fire._meta.db_table, Session._meta.db_table
    trigger, decision, mark = Trigger._meta.db_table, AutonomyDecision._meta.db_table, InboxMark._meta.db_table
    unprovenanced_cap = int(SIGNALS[0].saturation)
    sql = f"""
    WITH last_provenance AS (
        SELECT max(created_at) AS at FROM {delta}
        WHERE workspace_id = %(ws)s AND tags @> ARRAY[%(provenance)s]::varchar[]
          AND NOT tags @> ARRAY[%(marker)s]::varchar[]
    )
    SELECT
      (SELECT count(*) FROM (
          SELECT 1 FROM {delta} d, last_provenance lp
          WHERE d.workspace_id = %(ws)s AND (lp.at IS NULL OR d.created_at > lp.at)
            AND NOT d.source = ANY(%(own)s) ORDER BY d.created_at DESC LIMIT %(cap)s) AS x),
      (SELECT count(*) FROM (
          SELECT 1 FROM {delta} d
          WHERE d.workspace_id = %(ws)s AND d.tags @> ARRAY[%(directive)s]::varchar[]
            AND NOT EXISTS (SELECT 1 FROM {mark} m WHERE m.workspace_id = d.workspace_id AND m.delta_id = d.id
                            AND m.state IN ('dismissed', 'acted'))
          LIMIT 20) AS x),
      (SELECT max(created_at) FROM {fire} WHERE workspace_id = %(ws)s AND mode = 'self_directing'),
      (SELECT count(*) FROM {session}
        WHERE workspace_id = %(ws)s AND status = 'open' AND updated_at >= %(salient_since)s),
      (SELECT coalesce(sum(substring(content from '^[+-]?([0-9]*[.]?[0-9]+)')::float), 0) FROM {delta}
        WHERE workspace_id = %(ws)s AND tags @> ARRAY[%(mood)s]::varchar[] AND created_at >= %(mood_since)s),
      (SELECT count(*) FROM (
          SELECT p.id FROM {delta} p
          WHERE p.workspace_id = %(ws)s AND p.tags @> ARRAY[%(provenance)s]::varchar[]
            AND NOT p.tags @> ARRAY[%(marker)s]::varchar[] AND p.created_at < %(dormant_since)s
          ORDER BY p.created_at DESC LIMIT {DORMANT_CANDIDATES}) AS p
        WHERE NOT EXISTS (SELECT 1 FROM {delta} r WHERE r.workspace_id = %(ws)s AND r.created_at >= %(dormant_since)s
                          AND r.tags && ARRAY['affirms:' || p.id, 'from:' || p.id]::varchar[])),
      (SELECT count(*) - count(DISTINCT lower(split_part(m.content, E'\\n', 1))) FROM {delta} m
        WHERE m.workspace_id = %(ws)s AND m.tags @> ARRAY[%(marker)s]::varchar[] AND m.created_at >= %(marker_since)s
          AND NOT EXISTS (SELECT 1 FROM {delta} p WHERE p.workspace_id = %(ws)s
                          AND p.tags @> ARRAY[%(provenance)s, 'from:' || m.id]::varchar[]
                          AND NOT p.tags @> ARRAY[%(marker)s]::varchar[])),
      (SELECT max(created_at) FROM {trigger}
        WHERE workspace_id = %(ws)s AND kind = 'user_message' AND source <> 'sit'),
      (SELECT count(*) FROM {decision} WHERE workspace_id = %(ws)s AND action = 'sit' AND created_at >= %(day)s),
      (SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM {fire}
        WHERE workspace_id = %(ws)s AND session_id = %(autonomy_session)s AND created_at >= %(day)s)
      + (SELECT coalesce(sum(focus_tokens), 0) FROM {decision}
        WHERE workspace_id = %(ws)s AND action = 'sit' AND created_at >= %(day)s)
    """
    params = {
        "ws": settings.workspace_id, "provenance": PROVENANCE_TAG, "marker": QA_MARKER_TAG, "own": list(OWN_SOURCES),
        "cap": unprovenanced_cap, "directive": DIRECTIVE_TAG, "mood": MOOD_SHIFT_TAG,
        "salient_since": now - timedelta(hours=SALIENT_HOURS), "mood_since": now - timedelta(hours=MOOD_HOURS),
        "dormant_since": now - timedelta(days=DORMANT_DAYS), "marker_since": now - timedelta(days=MARKER_DAYS),
        "day": day_start, "autonomy_session": settings.session_id,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        (unprovenanced, directives, last_sit, threads, mood, dormant, duplicates, last_message, sits_today,
         tokens_today) = cursor.fetchone()
    since_sit = (now - last_sit).total_seconds() / 3600 if last_sit else SIGNALS[2].saturation
    raw = {"unprovenanced": unprovenanced, "directives": directives, "since_sit": since_sit,
           "salient_threads": threads, "mood_shift": float(mood), "dormant_patterns": dormant,
           "duplicate_markers": duplicates}
    gates = {"last_user_message_at": last_message, "sits_today": sits_today, "tokens_today": int(tokens_today),
             "extra": {"never_sat": last_sit is None}}
    return raw, gates
