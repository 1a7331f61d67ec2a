"""Autonomy's tables: the switch and its limits per workspace, the pressure series, every decision
the sweep takes, the operator's marks on inbox items, and the producers' runs."""

from django.db import models
from django.db.models import Q

from fathom.models import WorkspaceScoped
from harness.runtime.models import Session, Trigger


class AutonomyMode(models.TextChoices):
    OFF = "off"  # nothing is computed or recorded
    OBSERVE = "observe"  # pressure is sampled and every decision recorded; nothing fires
    ON = "on"  # a decision to sit starts an autonomous Sit


class AutonomySettings(WorkspaceScoped):
    """The switch and its limits for one workspace, editable in admin, REST and the CLI."""

    mode = models.CharField(max_length=8, choices=AutonomyMode.choices, default=AutonomyMode.OBSERVE)
    threshold = models.FloatField(default=0.35, help_text="pressure (0-1) at or above which Fathom sits")
    time_zone = models.CharField(max_length=64, default="UTC", help_text="IANA name; quiet hours are read in it")
    quiet_start = models.TimeField(null=True, blank=True, help_text="no autonomous Sit from this local time ...")
    quiet_end = models.TimeField(null=True, blank=True, help_text="... until this one (may wrap midnight)")
    idle_minutes = models.PositiveIntegerField(default=15, help_text="sit only after this long without a user message")
    window_minutes = models.PositiveIntegerField(default=60, help_text="at most one autonomous Sit per window")
    daily_sit_cap = models.PositiveSmallIntegerField(default=6, help_text="autonomous Sits per local day")
    daily_token_cap = models.PositiveIntegerField(default=200_000,
                                                  help_text="tokens autonomous Sits may use per local day (their "
                                                            "fires' and their focus calls')")
    sit_rounds = models.PositiveSmallIntegerField(default=3, help_text="round cap of an autonomous Sit")
    series_hours = models.PositiveSmallIntegerField(default=24,
                                                    help_text="how long pressure samples and skips are kept")
    cron = models.CharField(max_length=120, blank=True,
                            help_text="optional scheduled Sits (cron, in time_zone): a beat entry of their own")
    # The weights of the pressure signals (harness.autonomy.pressure.SIGNALS says what each measures).
    weight_unprovenanced = models.FloatField(default=0.25)
    weight_directives = models.FloatField(default=0.15)
    weight_since_sit = models.FloatField(default=0.15)
    weight_salient_threads = models.FloatField(default=0.10)
    weight_mood_shift = models.FloatField(default=0.10)
    weight_dormant_patterns = models.FloatField(default=0.05)
    weight_pending_conflicts = models.FloatField(default=0.10)
    weight_duplicate_markers = models.FloatField(default=0.10)
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                help_text="the autonomy session the Sits run in (made on first use)")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "harness_autonomysettings"
        verbose_name = "autonomy settings"
        verbose_name_plural = "autonomy settings"
        constraints = [
            models.UniqueConstraint(fields=["workspace"], name="autonomysettings_one_per_workspace"),
            models.CheckConstraint(condition=Q(threshold__gte=0) & Q(threshold__lte=1),
                                   name="autonomysettings_threshold_0_1"),
        ]

    def __str__(self):
        return f"autonomy of {self.workspace_id}: {self.mode}"


class PressureSample(WorkspaceScoped):
    """One beat sample of a workspace's pressure, kept for `series_hours`."""

    value = models.FloatField()
    breakdown = models.JSONField(default=dict)

    class Meta:
        db_table = "harness_pressuresample"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="pressuresample_ws_created")]


class AutonomyDecision(WorkspaceScoped):
    """What one sweep decided for a workspace, and why. A `sit` row is also the claim of its window:
    one per workspace and window, whoever inserts it first; its `sit_state` says whether the Sit it
    claimed has started (a claim whose start died is queued again by the sweep)."""

    class Action(models.TextChoices):
        SIT = "sit"  # an autonomous Sit was claimed for the window (sit_state says whether it started)
        WOULD_SIT = "would_sit"  # observe mode: everything allowed a Sit; none was started
        SKIP = "skip"

    class SitState(models.TextChoices):
        CLAIMED = "claimed"  # the window is taken; the Sit's first message is not made yet
        STARTED = "started"  # its first message is made: the harness carries the Sit from there
        LOST = "lost"  # every attempt to start it died: the window had no Sit

    mode = models.CharField(max_length=8, choices=AutonomyMode.choices)
    action = models.CharField(max_length=10, choices=Action.choices)
    reason = models.CharField(max_length=32, help_text="why: below_threshold, quiet_hours, not_idle, ...")
    detail = models.TextField(blank=True, help_text="the reason in words, as at the sweep")
    opens_at = models.DateTimeField(null=True, blank=True,
                                    help_text="when the gate that held the Sit back opens (idle, quiet hours, "
                                              "caps, the window)")
    pressure = models.FloatField(default=0)
    breakdown = models.JSONField(default=dict, blank=True)
    window_start = models.DateTimeField()
    scheduled = models.BooleanField(default=False, help_text="started by the cron schedule, not by pressure")
    focus = models.TextField(blank=True, help_text="the focus pre-pass's output: the Sit's first prompt")
    focus_source = models.CharField(max_length=16, blank=True, help_text="model, or fallback (the top signal)")
    focus_error = models.TextField(blank=True)
    focus_tokens = models.PositiveIntegerField(default=0, help_text="the focus calls' tokens (they count "
                                                                    "toward the daily token cap)")
    sit_state = models.CharField(max_length=8, choices=SitState.choices, blank=True,
                                 help_text="a sit decision's start: claimed, started or lost")
    start_queued_at = models.DateTimeField(null=True, blank=True, help_text="when the Sit's start was last queued")
    start_attempts = models.PositiveSmallIntegerField(default=0, help_text="how often the Sit's start was queued")
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    trigger = models.ForeignKey(Trigger, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        db_table = "harness_autonomydecision"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="autonomydecision_ws_created"),
                   models.Index(fields=["start_queued_at"], condition=Q(sit_state="claimed"),
                                name="autonomydecision_sit_claimed")]
        constraints = [models.UniqueConstraint(fields=["workspace", "window_start"], condition=Q(action="sit"),
                                               name="autonomydecision_one_sit_per_window")]

    def __str__(self):
        return f"{self.action} ({self.reason}) at {self.created_at:%Y-%m-%d %H:%M}"

    @property
    def words(self) -> str:
        """The decision as an operator reads it: "idle gate: last question 4 min ago; ... opens in 11 min"."""
        return reason_in_words(self.reason, self.detail)


# Each reason's name for an operator (the sweep's `detail` says the rest, as at the sweep).
REASON_WORDS = {
    "below_threshold": "below the threshold", "quiet_hours": "quiet hours", "not_idle": "idle gate",
    "sit_cap": "daily Sit cap reached", "token_cap": "daily token cap reached", "sit_running": "a Sit is running",
    "window_taken": "window taken", "observe": "would sit", "pressure": "sat", "scheduled": "sat on schedule",
    "off": "off",
}


def reason_in_words(reason: str, detail: str) -> str:
    label = REASON_WORDS.get(reason, reason)
    return f"{label}: {detail}" if detail else label


class InboxMark(WorkspaceScoped):
    """The operator's mark on an inbox item (a directive, reflection or Sit transcript delta): items
    without one are new."""

    class State(models.TextChoices):
        ACKNOWLEDGED = "acknowledged"
        DISMISSED = "dismissed"
        ACTED = "acted"  # a fire was started on it

    delta_id = models.CharField(max_length=32)
    state = models.CharField(max_length=16, choices=State.choices)
    actor = models.CharField(max_length=200, blank=True)
    trigger = models.ForeignKey(Trigger, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "harness_inboxmark"
        constraints = [models.UniqueConstraint(fields=["workspace", "delta_id"], name="inboxmark_one_per_delta")]

    def __str__(self):
        return f"{self.delta_id}: {self.state}"


class ProducerRun(WorkspaceScoped):
    class Producer(models.TextChoices):
        REFLECTIVE = "reflective"
        TOPICAL = "topical"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    class Origin(models.TextChoices):
        PRESSURE = "pressure"  # un-provenanced material accumulated (the autonomy sweep)
        BEAT = "beat"
        CLI = "cli"
        API = "api"

    producer = models.CharField(max_length=16, choices=Producer.choices)
    mode = models.CharField(max_length=8, blank=True, help_text="topical: window (episodes) or l2 (topics)")
    hours = models.PositiveIntegerField(default=24, help_text="the window it reads, back from its start")
    origin = models.CharField(max_length=10, choices=Origin.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    window_start = models.DateTimeField(null=True, blank=True, help_text="pressure runs: one per window")
    proposals = models.JSONField(default=list, blank=True, help_text="[{id, level, status, delta, decision}]")
    model_calls = models.PositiveSmallIntegerField(default=0)
    read = models.PositiveIntegerField(default=0, help_text="how many deltas it was shown")
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "harness_producerrun"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="producerrun_ws_created")]
        constraints = [models.UniqueConstraint(fields=["workspace", "producer", "window_start"],
                                               condition=Q(origin="pressure"), name="producerrun_one_per_window")]

    def __str__(self):
        return f"{self.producer} run {self.pk} ({self.status})"
