"""Proposals and what approving them produces.

A producer (a fire, an API client, a script) drafts a `Proposal`; the operator or the auto-policy
decides, and every decision leaves a `Decision` row. The proposal's record is kept whatever the
outcome. Approval produces the real thing: a provenance delta in the lake, a `Routine` driven by a
django-celery-beat `PeriodicTask`, or a `HelperJob` run by a configured host.
"""

from django.db import models
from django.db.models import Q
from django_celery_beat.models import PeriodicTask

from fathom.models import WorkspaceScoped

DEFAULT_AUTO_APPROVE_MAX_LEVEL = 2


class ProposalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"
    FAILED = "failed", "Failed"  # approved, but executing it failed; it may be approved again


class Proposal(WorkspaceScoped):
    """Something a producer wants done that waits for a decision. `payload` is what the producer
    drafted (validated by the handler registered for `tool`); the payload actually approved, which
    an operator may have edited, lives on the decision."""

    tool = models.CharField(max_length=64, help_text="provenance, routines, helper-dispatch, or a registered tool")
    title = models.CharField(max_length=300)
    payload = models.JSONField(default=dict)
    level = models.PositiveSmallIntegerField(null=True, blank=True, help_text="provenance level (1 episode, "
                                             "2 topic, 3 era, ...)")
    rationale = models.TextField(blank=True)
    producer = models.CharField(max_length=200, help_text="who drafted it: fire:<id>, apikey:<prefix>, script:<name>")
    status = models.CharField(max_length=16, choices=ProposalStatus.choices, default=ProposalStatus.PENDING)
    result_ref = models.CharField(max_length=200, blank=True,
                                  help_text="what approval produced: delta:<id>, routine:<id>, helper-job:<id>")
    failure_reason = models.TextField(blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["workspace", "status", "-created_at"], name="proposal_ws_status_created"),
            models.Index(fields=["workspace", "tool", "-created_at"], name="proposal_ws_tool_created"),
        ]
        permissions = [("decide_proposal", "Can approve or deny proposals")]

    def __str__(self):
        return f"#{self.pk} {self.tool}: {self.title}"


class DecisionAction(models.TextChoices):
    APPROVE = "approve", "Approve"
    EDIT = "edit", "Edit and approve"
    DENY = "deny", "Deny"


class Decision(WorkspaceScoped):
    """The audit row of one decision on a proposal. Never changed once written."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="decisions")
    action = models.CharField(max_length=16, choices=DecisionAction.choices)
    decided_by = models.CharField(max_length=200, help_text="operator:<user> or auto-policy:level<=<n>")
    payload = models.JSONField(default=dict, help_text="the payload as approved (or as it stood when denied)")
    reason = models.TextField(blank=True)
    result_ref = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True, help_text="why executing the approved payload failed")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["proposal", "-created_at"], name="decision_proposal_created")]

    def __str__(self):
        return f"{self.action} by {self.decided_by}"


class ProposalPolicy(WorkspaceScoped):
    """A workspace's gate. Without a row the defaults apply."""

    auto_approve_max_level = models.PositiveSmallIntegerField(
        default=DEFAULT_AUTO_APPROVE_MAX_LEVEL,
        help_text="provenance proposals at this level or below approve at draft time; 0 sends every one to an operator",
    )

    class Meta:
        verbose_name_plural = "proposal policies"
        constraints = [models.UniqueConstraint(fields=["workspace"], name="proposal_policy_one_per_workspace")]

    def __str__(self):
        return f"auto-approve provenance at level <= {self.auto_approve_max_level}"


class Routine(WorkspaceScoped):
    """A scheduled prompt minted from an approved `routines` proposal; beat runs it through
    `periodic_task` (the schedule, editable and switchable in admin)."""

    name = models.SlugField(max_length=100)
    schedule = models.CharField(max_length=120, help_text="cron: minute hour day-of-month month day-of-week")
    timezone = models.CharField(max_length=64, default="UTC")
    prompt = models.TextField()
    route = models.CharField(max_length=200, blank=True, help_text="where the fire's answer goes")
    proposal = models.ForeignKey(Proposal, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    periodic_task = models.OneToOneField(PeriodicTask, null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="+")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="routine_unique_name")]

    def __str__(self):
        return self.name


class RoutineRunStatus(models.TextChoices):
    RECORDED = "recorded", "Recorded"  # no fire starter is installed: the run is only recorded
    STARTED = "started", "Fire started"
    FAILED = "failed", "Failed"


class RoutineRun(WorkspaceScoped):
    """One tick of a routine. `task_id` makes a redelivered beat task record the same run."""

    routine = models.ForeignKey(Routine, on_delete=models.CASCADE, related_name="runs")
    task_id = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=16, choices=RoutineRunStatus.choices, default=RoutineRunStatus.RECORDED)
    prompt = models.TextField()
    route = models.CharField(max_length=200, blank=True)
    fire_ref = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["task_id"], condition=~Q(task_id=""),
                                               name="routine_run_unique_task")]


class HelperHost(WorkspaceScoped):
    """A machine helper dispatches may run on, and how. Hosts may also come from the
    FATHOM_HELPER_HOSTS setting (shared by every workspace); a row here wins over a setting of the
    same name."""

    name = models.SlugField(max_length=64)
    executor = models.CharField(max_length=32, default="local", help_text="how jobs run there: local, ...")
    command = models.JSONField(default=list, help_text='argv, e.g. ["claude", "-p", "{task}"]; the task also '
                               "arrives on stdin. Never run through a shell.")
    timeout_seconds = models.PositiveIntegerField(default=600)
    pass_env = models.JSONField(default=list, blank=True,
                                help_text="names of the worker's environment variables the job may see")
    config = models.JSONField(default=dict, blank=True, help_text="executor-specific options")
    enabled = models.BooleanField(default=True)
    description = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="helper_host_unique_name")]

    def __str__(self):
        return f"{self.name} ({self.executor})"


class HelperJobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    LOST = "lost", "Lost"  # its worker died mid-run; helper jobs are never run twice


class HelperJob(WorkspaceScoped):
    """One approved helper dispatch, run at most once on the `fires` queue."""

    proposal = models.ForeignKey(Proposal, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    host = models.CharField(max_length=64)
    title = models.CharField(max_length=300, blank=True)
    task = models.TextField()
    status = models.CharField(max_length=16, choices=HelperJobStatus.choices, default=HelperJobStatus.QUEUED)
    executor = models.CharField(max_length=32, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    timed_out = models.BooleanField(default=False)
    stdout = models.TextField(blank=True)
    stderr = models.TextField(blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    timeout_seconds = models.PositiveIntegerField(null=True, blank=True)
    delta_id = models.CharField(max_length=64, blank=True, help_text="the lake delta holding the output")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"helper job {self.pk} on {self.host} ({self.status})"
