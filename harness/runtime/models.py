"""Sessions and what flows through them: triggers in, turns, events out; and the profiles a
session copies when it starts (seed 003's AgentProfile / UserProfile)."""

import uuid

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from fathom.models import WorkspaceScoped


class AgentProfile(WorkspaceScoped):
    """Who the agent is: the AGENTS.md, SOUL.md and IDENTITY.md files, and its long-term memory."""

    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200, blank=True)
    agents_md = models.TextField(blank=True, help_text="AGENTS.md: how the agent works")
    soul_md = models.TextField(blank=True, help_text="SOUL.md: what it cares about")
    identity_md = models.TextField(blank=True, help_text="IDENTITY.md: who it is")
    memory = models.TextField(blank=True, help_text="long-term memory the agent carries into every session")
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "harness_agentprofile"
        ordering = ["slug"]
        constraints = [models.UniqueConstraint(fields=["workspace", "slug"], name="agentprofile_unique_slug")]

    def __str__(self):
        return self.slug


class UserProfile(WorkspaceScoped):
    """Who the agent talks to: USER.md, long-term memory and preferences."""

    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200, blank=True)
    user_md = models.TextField(blank=True, help_text="USER.md: who this person is to the agent")
    memory = models.TextField(blank=True)
    preferences = models.JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "harness_userprofile"
        ordering = ["slug"]
        constraints = [models.UniqueConstraint(fields=["workspace", "slug"], name="userprofile_unique_slug")]

    def __str__(self):
        return self.slug


class Claimable(models.Model):
    """A row that one worker at a time may work on: `runner` names the claimant
    ("host:pid:thread"), `runner_heartbeat_at` says when it last proved it was alive."""

    runner = models.CharField(max_length=200, blank=True, default="")
    runner_heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class Session(WorkspaceScoped, Claimable):
    """One conversation: its river (the tag every delta of the conversation carries), immutable
    copies of the profiles it started with, its queued triggers and its turns."""

    class Status(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tag = models.CharField(max_length=100, db_index=True, help_text="the river: session:<...>")
    title = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    agent_profile = models.ForeignKey(AgentProfile, null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="sessions")
    user_profile = models.ForeignKey(UserProfile, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="sessions")
    agent_profile_copy = models.JSONField(default=dict, blank=True)
    user_profile_copy = models.JSONField(default=dict, blank=True)
    profiles_copied_at = models.DateTimeField(null=True, blank=True)
    last_event_seq = models.PositiveBigIntegerField(default=0)
    turn_count = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "harness_session"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="session_ws_created")]

    def __str__(self):
        return self.title or self.tag


class Trigger(WorkspaceScoped):
    """An input to a session. Queued until a turn snapshots it; consumed when that turn ends.
    A user message also carries whether the agent addressed it (and its note). Every other kind is a
    machine trigger (MACHINE_KINDS): a notice of what happened, asked by no one."""

    class Kind(models.TextChoices):
        USER_MESSAGE = "user_message", "UserMessage"
        TASK_DONE = "task_done", "TaskDone"
        HEARTBEAT = "heartbeat", "Heartbeat"
        CRON = "cron", "Cron"
        REFRESH_PROFILE = "refresh_profile", "RefreshProfile"

    MACHINE_KINDS = frozenset({Kind.TASK_DONE, Kind.HEARTBEAT, Kind.CRON, Kind.REFRESH_PROFILE})

    class State(models.TextChoices):
        QUEUED = "queued"
        SNAPSHOTTED = "snapshotted"
        CONSUMED = "consumed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="triggers")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    content = models.TextField(blank=True)
    payload = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=40, default="api", help_text="api, sit, beat, task, system")
    author = models.CharField(max_length=64, blank=True)
    turn = models.ForeignKey("Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="triggers")
    idempotency_key = models.CharField(max_length=255, blank=True, default="")  # MAX_IDEMPOTENCY_KEY_LENGTH
    # User messages only: the agent ticks them off (mark_addressed); unaddressed ones fire again.
    addressed = models.BooleanField(default=False)
    addressed_note = models.TextField(blank=True)
    addressed_at = models.DateTimeField(null=True, blank=True)
    refires = models.PositiveSmallIntegerField(default=0, help_text="turns that took it up again unaddressed")
    given_up_at = models.DateTimeField(null=True, blank=True,
                                       help_text="left unaddressed after the refire cap; reported, not retried")

    class Meta:
        db_table = "harness_trigger"
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["session", "state", "created_at"], name="trigger_session_state"),
            models.Index(fields=["session", "addressed"], name="trigger_unaddressed",
                         condition=models.Q(kind="user_message", addressed=False, given_up_at__isnull=True)),
        ]
        constraints = [
            models.UniqueConstraint(fields=["session", "idempotency_key"], name="trigger_unique_idempotency_key",
                                    condition=~models.Q(idempotency_key="")),
        ]

    def __str__(self):
        return f"{self.get_kind_display()} {self.id}"

    @property
    def is_user_message(self) -> bool:
        return self.kind == self.Kind.USER_MESSAGE


class Turn(WorkspaceScoped):
    """One agent turn of a session: the triggers it snapshotted, and the user messages it took up
    again because an earlier turn left them unaddressed (`refired_ids`)."""

    class Status(models.TextChoices):
        RUNNING = "running"
        ENDED = "ended"
        FAILED = "failed"
        CANCELLED = "cancelled"  # its work (a fire) was cancelled: what it was asked stays unanswered

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    refired_ids = models.JSONField(default=list, blank=True)
    runner = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "harness_turn"
        ordering = ["session", "number"]
        constraints = [models.UniqueConstraint(fields=["session", "number"], name="turn_unique_number")]

    def __str__(self):
        return f"turn {self.number} of {self.session_id}"


class SessionEvent(WorkspaceScoped):
    """What a session publishes, numbered 1, 2, 3... per session with no gaps, in commit order
    (the number is taken under the session row's lock), so a reader resuming after N misses nothing."""

    class Kind(models.TextChoices):
        TRIGGER_ACCEPTED = "TriggerAccepted"
        TURN_STARTED = "TurnStarted"
        TURN_ENDED = "TurnEnded"
        ASSISTANT_OUTPUT = "AssistantOutput"
        TASK_STATE_CHANGED = "TaskStateChanged"
        PROFILE_REFRESHED = "ProfileRefreshed"
        AGENT_STREAM = "AgentStream"
        TURN_FAILURE = "TurnFailure"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=32, choices=Kind.choices)
    turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "harness_sessionevent"
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="sessionevent_unique_seq")]

    def __str__(self):
        return f"{self.seq} {self.kind}"


def _task_capacity_workspace() -> int:
    return settings.FATHOM_TASK_CAPACITY_WORKSPACE


def _task_capacity_session() -> int:
    return settings.FATHOM_TASK_CAPACITY_SESSION


class HarnessSettings(WorkspaceScoped):
    """The harness's runtime thresholds for one workspace, editable in admin without a restart."""

    max_turns_per_fire = models.PositiveSmallIntegerField(default=12)
    sit_round_cap = models.PositiveSmallIntegerField(default=5)
    refire_cap = models.PositiveSmallIntegerField(
        default=2, help_text="how many more turns an unaddressed user message may fire before it is given up")
    refire_delay_seconds = models.PositiveIntegerField(default=2)
    stale_after_seconds = models.PositiveIntegerField(
        default=20, validators=[MinValueValidator(15)],
        help_text="a claimed session, fire or task whose claim's heartbeat is this old is taken over (a "
                  "runner's heartbeat is refreshed every 5 s while it holds the claim)")
    history_messages = models.PositiveSmallIntegerField(
        default=40, help_text="how many earlier conversation messages a fire sees uncompacted")
    # Background tasks (Task): capacity, time limit and attempts.
    task_capacity_workspace = models.PositiveSmallIntegerField(
        default=_task_capacity_workspace, help_text="background tasks running at once in the workspace; "
                                                    "more wait, Pending, and start as running ones end")
    task_capacity_session = models.PositiveSmallIntegerField(
        default=_task_capacity_session, help_text="background tasks running at once in one session")
    task_timeout_seconds = models.PositiveIntegerField(
        default=300, help_text="a background task running longer than this fails (timed out)")
    task_max_attempts = models.PositiveSmallIntegerField(
        default=2, help_text="runs a background task gets when its worker dies under it; then it fails")
    stream_batch_ms = models.PositiveIntegerField(
        default=50, help_text="a session's fire sends the text it is writing as AgentStream events at most this "
                              "often (milliseconds; the first at once)")

    class Meta:
        db_table = "harness_harnesssettings"
        verbose_name = "harness settings"
        verbose_name_plural = "harness settings"
        constraints = [models.UniqueConstraint(fields=["workspace"], name="harnesssettings_one_per_workspace")]

    def __str__(self):
        return f"harness settings of {self.workspace_id}"


class Task(WorkspaceScoped, Claimable):
    """A background task (seed 003): one per model tool call of a background tool (fs_read, ...),
    run on a worker. Pending until capacity is free, Running, then Succeeded, Failed or Canceled;
    when it ends it re-enters its session as a TaskDone trigger carrying its result."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELED = "canceled", "Canceled"

    TERMINAL = (State.SUCCEEDED, State.FAILED, State.CANCELED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="tasks")
    fire = models.ForeignKey("fires.Fire", null=True, blank=True, on_delete=models.SET_NULL, related_name="tasks")
    call_id = models.CharField(max_length=200, blank=True, help_text="the model's tool call this task runs")
    idempotency_key = models.CharField(max_length=300, unique=True,
                                       help_text="fire:turn:call: a replayed tool call finds its task")
    tool = models.CharField(max_length=64)
    arguments = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    result = models.TextField(blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="runs started on a worker")
    max_attempts = models.PositiveSmallIntegerField(default=2)
    timeout_seconds = models.PositiveIntegerField(default=300)
    cancel_requested_by = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="when it took its capacity (Running)")
    picked_at = models.DateTimeField(null=True, blank=True, help_text="when a worker began its current run")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "harness_task"
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["session", "created_at"], name="task_session_created"),
            models.Index(fields=["workspace", "created_at"], name="task_waiting",
                         condition=models.Q(state="pending")),
            models.Index(fields=["state"], name="task_running", condition=models.Q(state="running")),
        ]

    def __str__(self):
        return f"{self.tool} {self.id}"

    @property
    def is_terminal(self) -> bool:
        return self.state in self.TERMINAL


class TaskSlots(models.Model):
    """How many tasks run now in one scope (`workspace:<id>` or `session:<id>`): a task takes a slot
    with a conditional UPDATE (`running < capacity`), so concurrent starters never over-start."""

    scope = models.CharField(max_length=80, unique=True)
    running = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "harness_taskslots"
        verbose_name_plural = "task slots"

    def __str__(self):
        return f"{self.scope}: {self.running}"


class ProfileFieldVersion(WorkspaceScoped):
    """The value a profile field had before a write replaced it (managed files keep their history)."""

    agent_profile = models.ForeignKey(AgentProfile, null=True, blank=True, on_delete=models.CASCADE,
                                      related_name="field_versions")
    user_profile = models.ForeignKey(UserProfile, null=True, blank=True, on_delete=models.CASCADE,
                                     related_name="field_versions")
    field = models.CharField(max_length=32, help_text="the profile field (agents_md, memory, preferences, ...)")
    version = models.PositiveIntegerField(help_text="the profile's version while the field held this value")
    content = models.TextField(blank=True, help_text="the replaced value (preferences as JSON)")
    replaced_by = models.CharField(max_length=200, blank=True, help_text="api, or task:<id>")

    class Meta:
        db_table = "harness_profilefieldversion"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["agent_profile", "field", "-created_at"], name="pfv_agent"),
                   models.Index(fields=["user_profile", "field", "-created_at"], name="pfv_user")]
        constraints = [models.CheckConstraint(
            condition=models.Q(agent_profile__isnull=True) ^ models.Q(user_profile__isnull=True),
            name="profilefieldversion_one_profile")]

    def __str__(self):
        return f"{self.field} v{self.version}"


class SessionSchedule(WorkspaceScoped):
    """A heartbeat (every N seconds) or a cron schedule of a session: a django-celery-beat entry,
    owned by this row, whose ticks queue a Heartbeat or Cron trigger on the session. A session has
    at most one heartbeat and any number of cron schedules."""

    class Kind(models.TextChoices):
        HEARTBEAT = "heartbeat", "Heartbeat"
        CRON = "cron", "Cron"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="schedules")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    every_seconds = models.PositiveIntegerField(null=True, blank=True, help_text="heartbeat: the interval")
    cron = models.CharField(max_length=120, blank=True, help_text="cron: minute hour day-of-month month day-of-week")
    timezone = models.CharField(max_length=64, default="UTC")
    content = models.TextField(blank=True, help_text="what the trigger says to the agent (optional)")
    periodic_task = models.OneToOneField("django_celery_beat.PeriodicTask", null=True, blank=True,
                                         on_delete=models.SET_NULL, related_name="+")
    last_fired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "harness_sessionschedule"
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["session"], condition=models.Q(kind="heartbeat"),
                                    name="sessionschedule_one_heartbeat"),
            models.CheckConstraint(
                condition=(models.Q(kind="heartbeat", every_seconds__gt=0, cron="")
                           | models.Q(kind="cron", every_seconds__isnull=True) & ~models.Q(cron="")),
                name="sessionschedule_kind_fields"),
        ]

    def __str__(self):
        return f"{self.kind} every {self.every_seconds} s" if self.kind == self.Kind.HEARTBEAT else f"cron {self.cron}"
