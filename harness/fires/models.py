"""A fire (seed 000): one run of the threaded tool loop, with its journal of turns and tool calls.

The journal is the fire's durable state: every model response (a FireTurn) and every tool result (a
FireToolCall) is committed before the next model call, so a fire whose worker died resumes from
the last committed turn. A tool call is identified by (fire, turn, call id), which is also the
idempotency key side-effecting tools write under."""

import uuid

from django.db import models

from fathom.models import WorkspaceScoped
from harness.runtime.models import Claimable, Session, Turn


class Fire(WorkspaceScoped, Claimable):
    class Mode(models.TextChoices):
        REACTIVE = "reactive"
        SELF_DIRECTING = "self_directing"
        INTROSPECTIVE = "introspective"

    class Status(models.TextChoices):
        ACCEPTED = "accepted"  # recorded, no model call yet
        RUNNING = "running"
        FINISHED = "finished"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Phase(models.TextChoices):
        MAIN = "main"  # the turn loop, until respond
        VERIFY = "verify"  # the quality harness's post-flight: contract and verifier (harness.quality)
        WRITES = "writes"  # the per-fire writes, once
        REVIEW = "review"  # the post-response review pass: propose_provenance or skip
        DONE = "done"

    class StopReason(models.TextChoices):
        RESPONDED = "responded"
        MAX_TURNS = "max_turns"  # the turn cap forced a final respond
        ERROR = "error"
        CANCELLED = "cancelled"
        BUDGET_EXCEEDED = "budget_exceeded"  # its trace made as many model calls as it may (fathom.llm.budget)

    class Verdict(models.TextChoices):
        """What the lifecycle hooks' checks said of the answer kept (harness.fires.hooks.Verdict)."""

        UNCHECKED = "unchecked"  # no hook checked it (or the fire did not answer)
        PASSED = "passed"
        DEGRADED = "degraded"  # it failed its checks and no retry was left: delivered marked, not memory

    TERMINAL = (Status.FINISHED, Status.FAILED, Status.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    mode = models.CharField(max_length=20, choices=Mode.choices, default=Mode.REACTIVE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACCEPTED)
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.MAIN)
    stop_reason = models.CharField(max_length=16, choices=StopReason.choices, blank=True)
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.CASCADE, related_name="fires")
    turn = models.OneToOneField(Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="fire")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    depth = models.PositiveSmallIntegerField(default=0)
    # Parent fire, its turn and the tool call that spawned this one: the child's idempotency key.
    spawned_by = models.CharField(max_length=200, blank=True, default="")
    question = models.TextField(blank=True, help_text="what the fire answers, for lists and the Q/A marker")
    work_set = models.JSONField(default=dict, blank=True,
                                help_text="{messages: [{id, content, ...}], pending: [ids]}: what the fire works on")
    disabled_tools = models.JSONField(default=list, blank=True)
    plan = models.JSONField(default=list, blank=True, help_text="[{step, text, status}]: the active plan")
    plan_events = models.JSONField(default=list, blank=True,
                                   help_text="drifts from the plan and its revisions (harness.fires.tools.plan)")
    response = models.JSONField(default=dict, blank=True, help_text="the respond tool's arguments")
    verdict = models.CharField(max_length=16, choices=Verdict.choices, default=Verdict.UNCHECKED)
    verdict_reasons = models.JSONField(default=list, blank=True, help_text="why the answer is degraded")
    review = models.JSONField(default=dict, blank=True, help_text="the review pass's outcome")
    writes = models.JSONField(default=dict, blank=True, help_text="ids of the per-fire writes")
    writes_done_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    model_calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    trace_id = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "harness_fire"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="fire_ws_created"),
                   models.Index(fields=["status"], name="fire_status",
                                condition=models.Q(status__in=["accepted", "running"]))]
        constraints = [models.UniqueConstraint(fields=["spawned_by"], name="fire_unique_spawned_by",
                                               condition=~models.Q(spawned_by=""))]

    def __str__(self):
        return f"{self.mode} fire {self.id}"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL

    @property
    def verdict_detail(self) -> dict:
        """The checks' verdict on the answer as clients read it: {status: passed | degraded | unchecked, reasons}."""
        return {"status": self.verdict, "reasons": list(self.verdict_reasons)}

    @property
    def autonomous(self) -> str:
        """The autonomy decision that started this fire's Sit ("" for a Sit an operator started, or no Sit)."""
        return next((str(m["sit"].get("autonomous", "")) for m in self.work_set.get("messages", [])
                     if isinstance(m.get("sit"), dict)), "")


class FireTurn(WorkspaceScoped):
    """One model response of a fire, committed before its tools run."""

    fire = models.ForeignKey(Fire, on_delete=models.CASCADE, related_name="turns")
    number = models.PositiveSmallIntegerField()
    phase = models.CharField(max_length=16, choices=Fire.Phase.choices, default=Fire.Phase.MAIN)
    text = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list, blank=True, help_text="[{id, name, arguments}] as the model asked")
    forced = models.BooleanField(default=False, help_text="the turn cap's forced final respond")
    stop_reason = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=200, blank=True)
    provider = models.CharField(max_length=64, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.FloatField(default=0)
    call_id = models.CharField(max_length=64, blank=True)

    class Meta:
        db_table = "harness_fireturn"
        ordering = ["fire", "number"]
        constraints = [models.UniqueConstraint(fields=["fire", "number"], name="fireturn_unique_number")]

    def __str__(self):
        return f"turn {self.number} of {self.fire_id}"


class FireToolCall(WorkspaceScoped):
    """One tool call of a turn and its result (whole, never truncated). `ok=False` results carry the
    error the model was shown."""

    fire = models.ForeignKey(Fire, on_delete=models.CASCADE, related_name="tool_calls")
    turn = models.ForeignKey(FireTurn, on_delete=models.CASCADE, related_name="calls")
    call_id = models.CharField(max_length=200)
    position = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=64)
    arguments = models.JSONField(default=dict, blank=True)
    plan_step = models.PositiveSmallIntegerField(null=True, blank=True)
    result = models.TextField(blank=True)
    ok = models.BooleanField(default=True)
    latency_ms = models.FloatField(default=0)

    class Meta:
        db_table = "harness_firetoolcall"
        ordering = ["turn", "position"]
        constraints = [models.UniqueConstraint(fields=["turn", "call_id"], name="firetoolcall_unique_call")]

    def __str__(self):
        return f"{self.name} ({self.call_id})"

    @property
    def idempotency_key(self) -> str:
        return f"{self.fire_id}:{self.turn.number}:{self.call_id}"


