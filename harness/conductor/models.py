"""The conductor's tables (seed 004): a Run of one objective, its agenda, the capability calls that
carry the agenda out on workers, the conductor's decisions, and the run's event stream.

The invariants live in constraints, so that a redelivered step can never do a thing twice: one
capability call per agenda item (a dispatch is a row, created once), one decision per number in a
run, one event per number in a run."""

import uuid

from django.db import models

from fathom.models import WorkspaceScoped
from harness.runtime.models import Claimable


class ConductorSettings(WorkspaceScoped):
    """The conductor's runtime thresholds for one workspace, editable in admin without a restart."""

    terminal_enabled = models.BooleanField(
        default=False, help_text="offer the terminal worker (shell commands inside the workspace's file root)")
    terminal_timeout_seconds = models.PositiveIntegerField(default=30, help_text="wall-clock limit of one command")
    terminal_cpu_seconds = models.PositiveIntegerField(default=20, help_text="CPU-time limit of one command")
    terminal_memory_mb = models.PositiveIntegerField(default=512, help_text="address-space limit of one command")
    terminal_file_mb = models.PositiveIntegerField(default=64, help_text="largest file one command may write")
    terminal_output_chars = models.PositiveIntegerField(default=8000, help_text="output kept of one command")
    terminal_network = models.BooleanField(
        default=False, help_text="let the terminal's commands use the network (off: a network namespace of their "
                                 "own, with nothing but its own loopback)")
    max_steps = models.PositiveSmallIntegerField(
        default=8, help_text="the most model turns one terminal worker takes (a researcher is bounded by the "
                             "harness's max turns per fire)")
    max_decisions = models.PositiveSmallIntegerField(
        default=6, help_text="the most decision calls one run makes; past it the run is blocked")

    class Meta:
        db_table = "harness_conductorsettings"
        verbose_name = "conductor settings"
        verbose_name_plural = "conductor settings"
        constraints = [models.UniqueConstraint(fields=["workspace"], name="conductorsettings_one_per_workspace")]

    def __str__(self):
        return f"conductor settings of {self.workspace_id}"


class Run(WorkspaceScoped, Claimable):
    """One objective carried out by the conductor. `canon` holds the merged results; the claim
    (Claimable) is held only around the conductor's model calls (bootstrap, decision)."""

    class Status(models.TextChoices):
        ACCEPTED = "accepted"  # recorded, bootstrap not made yet
        RUNNING = "running"
        COMPLETED = "completed"
        BLOCKED = "blocked"
        FAILED = "failed"
        CANCELLED = "cancelled"

    TERMINAL = (Status.COMPLETED, Status.BLOCKED, Status.FAILED, Status.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    objective = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACCEPTED)
    capabilities = models.JSONField(default=list, blank=True, help_text="the capabilities offered to this run")
    canon = models.JSONField(default=list, blank=True, help_text="[{item, capability, result}]: merged results")
    answer = models.TextField(blank=True, help_text="what Complete said, or why the run blocked or failed")
    bootstrapped_at = models.DateTimeField(null=True, blank=True)
    decisions_made = models.PositiveSmallIntegerField(default=0)
    last_event_seq = models.PositiveBigIntegerField(default=0)
    trace_id = models.CharField(max_length=32, blank=True)
    root_span_id = models.CharField(max_length=16, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "harness_run"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="run_ws_created"),
                   models.Index(fields=["status"], name="run_live",
                                condition=models.Q(status__in=["accepted", "running"]))]

    def __str__(self):
        return f"run {self.id}"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL

    @property
    def actor_id(self) -> str:
        return f"conductor:{self.pk}"


class AgendaItem(WorkspaceScoped):
    """One piece of work of a run: a capability and its input. WAITING until the items it depends on
    are done, then READY; IN_FLIGHT once dispatched; DONE or FAILED with its call's result."""

    class State(models.TextChoices):
        WAITING = "waiting"
        READY = "ready"
        IN_FLIGHT = "in_flight"
        DONE = "done"
        FAILED = "failed"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="agenda")
    number = models.PositiveSmallIntegerField(help_text="1, 2, 3... within the run")
    capability = models.CharField(max_length=32)
    input = models.JSONField(default=dict, blank=True, help_text="{task, command?}")
    depends_on = models.JSONField(default=list, blank=True, help_text="numbers of the items this one waits for")
    state = models.CharField(max_length=16, choices=State.choices, default=State.READY)
    source = models.CharField(max_length=32, help_text="bootstrap, or decision:<number>")
    result = models.TextField(blank=True)
    merged = models.BooleanField(default=False, help_text="its result is in the run's canon")

    class Meta:
        db_table = "harness_agendaitem"
        ordering = ["run", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="agendaitem_unique_number")]

    def __str__(self):
        return f"{self.number}. {self.capability} of {self.run_id}"


RESEARCH_KEY_PREFIX = "conductor:"


class CapabilityCall(WorkspaceScoped, Claimable):
    """The dispatch of one agenda item to a worker (one per item: a redelivered step cannot dispatch
    it twice). `call_id` is the run-scoped id the trace and the graph name it by."""

    class Status(models.TextChoices):
        DISPATCHED = "dispatched"  # its Celery task is on its way
        RUNNING = "running"
        FINISHED = "finished"
        FAILED = "failed"

    TERMINAL = (Status.FINISHED, Status.FAILED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="calls")
    item = models.OneToOneField(AgendaItem, on_delete=models.CASCADE, related_name="call")
    worker = models.CharField(max_length=32, help_text="the worker kind: researcher or terminal")
    call_id = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DISPATCHED)
    task_id = models.CharField(max_length=64, blank=True, help_text="the Celery task that carries it")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="how many times a worker took it up")
    fire = models.ForeignKey("fires.Fire", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    journal = models.JSONField(default=list, blank=True, help_text="a terminal worker's steps, committed one by one")
    result = models.TextField(blank=True)
    error = models.TextField(blank=True)
    model_calls = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "harness_capabilitycall"
        ordering = ["run", "created_at"]

    def __str__(self):
        return f"{self.worker} call {self.call_id}"

    @property
    def actor_id(self) -> str:
        return f"{self.worker}:{self.call_id}"

    @property
    def research_key(self) -> str:
        """The `spawned_by` of its research fire: the fire is made once, and knows the call it is for."""
        return f"{RESEARCH_KEY_PREFIX}{self.call_id}"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL


class Decision(WorkspaceScoped):
    """One conductor model call and what came of it: the bootstrap (its agenda in `payload`), or a
    decision (one typed action). Output the policy could not use is kept, with its typed error."""

    class Kind(models.TextChoices):
        BOOTSTRAP = "bootstrap"
        DECIDE = "decide"

    class Action(models.TextChoices):
        SPAWN_WORKER = "SpawnWorker"
        AWAIT_WORKER = "AwaitWorker"
        MERGE_CANON = "MergeCanon"
        COMPLETE = "Complete"
        BLOCK = "Block"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="decisions")
    number = models.PositiveSmallIntegerField(help_text="0 for the bootstrap, then 1, 2, 3...")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    action = models.CharField(max_length=16, choices=Action.choices, blank=True)
    reason = models.TextField(blank=True)
    payload = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, help_text="the typed error of output the policy could not use")
    state_summary = models.TextField(blank=True, help_text="the runtime state the prompt carried")
    llm_call_id = models.CharField(max_length=64, blank=True)

    class Meta:
        db_table = "harness_decision"
        ordering = ["run", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="decision_unique_number")]

    def __str__(self):
        return f"{self.kind} {self.number} of {self.run_id}: {self.action or self.error[:40]}"


class RunEvent(WorkspaceScoped):
    """What a run publishes, numbered 1, 2, 3... per run in commit order (the number is taken under
    the run row's lock), streamed like a session's events."""

    class Kind(models.TextChoices):
        RUN_ACCEPTED = "RunAccepted"
        AGENDA_SET = "AgendaSet"
        CALL_DISPATCHED = "CapabilityCallDispatched"
        CALL_FINISHED = "CapabilityCallFinished"
        DECISION_MADE = "DecisionMade"
        RUN_FINISHED = "RunFinished"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=32, choices=Kind.choices)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "harness_runevent"
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq")]

    def __str__(self):
        return f"{self.seq} {self.kind}"
