"""The quality harness's tables (seed 001): one QualityRun per fire with its attempts, the workspace's
quality settings and per-workflow retry policy, users' feedback, and the prompt registry's overrides.

A QualityRun is the harness's durable state for its fire, as the journal is the loop's: what the
pre-flight decided (complexity, plan, swarm), which attempt runs, and what the fire waits for while
its verifiers (called in its own run, or a group on the quality worker), its swarm or its subtasks
answer (`waiting_for`, with the token of what was sent)."""

from django.core.exceptions import ValidationError
from django.db import models

from fathom.models import WorkspaceScoped

WORKFLOWS = ("chat", "synthesis", "recommendation", "drafting", "full_pipeline")
DEFAULT_SPECIALISTS = ["evidence", "patterns", "contradictions", "gaps", "implications"]
# the contract thresholds a workspace may set per workflow (harness.quality.contracts.ExpectedOutput's)
CONTRACT_FIELDS = ("min_output_chars", "min_insights", "min_recommendations", "min_documents", "require_citations")


class QualitySettings(WorkspaceScoped):
    """One workspace's quality harness switches, editable in admin."""

    enabled = models.BooleanField(default=True, help_text="the harness wraps this workspace's top-level fires")
    swarm_enabled = models.BooleanField(
        default=False, help_text="synthesis over many sources may run a specialist swarm (the seed's plan entitlement)")
    swarm_min_sources = models.PositiveSmallIntegerField(default=5)
    swarm_specialists = models.JSONField(default=list, blank=True,
                                         help_text="the specialists' angles (empty: the five defaults)")
    calibration = models.TextField(blank=True, help_text="rebuilt every 5 minutes from feedback mismatches; "
                                                         "the verifier's system prompt carries it")
    calibration_built_at = models.DateTimeField(null=True, blank=True)
    contracts = models.JSONField(
        default=dict, blank=True,
        help_text="per workflow, thresholds that replace the seed's contract: {\"chat\": {\"min_output_chars\": 80}}; "
                  f"fields: {', '.join(CONTRACT_FIELDS)}")

    class Meta:
        db_table = "harness_qualitysettings"
        verbose_name = "quality settings"
        verbose_name_plural = "quality settings"
        constraints = [models.UniqueConstraint(fields=["workspace"], name="qualitysettings_one_per_workspace")]

    def __str__(self):
        return f"quality settings of {self.workspace_id}"

    def clean(self):
        problems = contracts_problems(self.contracts)
        if problems:
            raise ValidationError({"contracts": problems})

    @property
    def specialists(self) -> list[str]:
        return [str(s) for s in self.swarm_specialists if str(s).strip()] or list(DEFAULT_SPECIALISTS)


class QualityRetryPolicy(WorkspaceScoped):
    """How often a workflow's answer may be retried, and what counts as good enough (seed 001's
    "Policy per workflow"); rows are created with the seed's defaults on first use."""

    workflow_type = models.CharField(max_length=20, choices=[(w, w) for w in WORKFLOWS])
    max_attempts = models.PositiveSmallIntegerField()
    good_enough_score = models.FloatField()
    low_quality_threshold = models.FloatField()

    class Meta:
        db_table = "harness_qualityretrypolicy"
        verbose_name = "quality retry policy"
        verbose_name_plural = "quality retry policies"
        ordering = ["workspace", "workflow_type"]
        constraints = [models.UniqueConstraint(fields=["workspace", "workflow_type"],
                                               name="qualityretrypolicy_unique_workflow")]

    def __str__(self):
        return f"{self.workflow_type}: {self.max_attempts} attempts, good enough {self.good_enough_score}"


class QualityPrompt(models.Model):
    """An override of a built-in prompt of the harness (harness.quality.prompts), by id."""

    prompt_id = models.CharField(max_length=64, unique=True)
    text = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "harness_qualityprompt"
        ordering = ["prompt_id"]

    def __str__(self):
        return self.prompt_id


class QualityRun(WorkspaceScoped):
    """The quality harness's record of one fire."""

    class State(models.TextChoices):
        RUNNING = "running"  # pre-flight done; an attempt runs (or its swarm)
        VERIFYING = "verifying"  # an attempt answered; its verifier group runs
        DONE = "done"  # an answer was kept (passed, or degraded)
        ENDED = "ended"  # the fire ended before that (cancelled, failed): `end_reason` says how

    OPEN = (State.RUNNING, State.VERIFYING)

    fire = models.OneToOneField("fires.Fire", on_delete=models.CASCADE, related_name="quality")
    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING)
    end_reason = models.CharField(max_length=16, blank=True,
                                  help_text="the fire's stop reason when it ended with the run open")
    complexity = models.JSONField(default=dict, blank=True,
                                  help_text="level, reason, subtask_count, workflow_type, expected, is_fallback")
    plan = models.JSONField(default=dict, blank=True, help_text="the selected plan, its score, the candidates")
    sources = models.JSONField(default=list, blank=True, help_text="delta ids the pre-flight retrieved")
    swarm = models.JSONField(default=dict, blank=True, help_text="specialists, their results, the aggregate")
    attempt = models.PositiveSmallIntegerField(default=1, help_text="the attempt that runs now")
    iterations = models.PositiveSmallIntegerField(
        default=1, help_text="deep-synthesis iteration: attempts made whatever their score, the best kept (1: off)")
    waiting_for = models.CharField(max_length=16, blank=True, help_text="'verifier' or 'swarm' while parked")
    waiting_token = models.CharField(max_length=64, blank=True, help_text="the chord the fire waits for")
    waiting_since = models.DateTimeField(null=True, blank=True)
    scores = models.JSONField(default=dict, blank=True, help_text="RQS / RecQS / DocQS of the final answer")
    degraded = models.JSONField(default=dict, blank=True, help_text="set when the attempts ran out")
    profile = models.JSONField(default=dict, blank=True, help_text="the workspace profile after this run")
    context_metrics = models.JSONField(default=dict, blank=True)
    events = models.JSONField(default=list, blank=True, help_text="every harness event of the run, in order")
    final_attempt = models.PositiveSmallIntegerField(null=True, blank=True)
    verifier_score = models.FloatField(null=True, blank=True, help_text="the final attempt's verifier score")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "harness_qualityrun"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="qualityrun_ws_created"),
                   models.Index(fields=["waiting_since"], name="qualityrun_waiting",
                                condition=~models.Q(waiting_for=""))]

    def __str__(self):
        return f"quality of fire {self.fire_id}"


class QualityAttempt(WorkspaceScoped):
    """One attempt of a fire's answer: its response, the contract's and the verifier's verdicts."""

    run = models.ForeignKey(QualityRun, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    first_turn = models.PositiveSmallIntegerField(default=0, help_text="main-phase turns before this attempt")
    healing_prompt = models.TextField(blank=True)
    response = models.JSONField(default=dict, blank=True)
    stream_alerts = models.JSONField(default=list, blank=True)
    contract = models.JSONField(default=dict, blank=True)
    verifier = models.JSONField(default=dict, blank=True, help_text="the combined verdict")
    perspectives = models.JSONField(default=dict, blank=True, help_text="each verifier task's verdict, by name")
    combined = models.FloatField(null=True, blank=True)
    decision = models.JSONField(default=dict, blank=True, help_text="should_retry's answer and reason")

    class Meta:
        db_table = "harness_qualityattempt"
        ordering = ["run", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="qualityattempt_unique_number")]

    def __str__(self):
        return f"attempt {self.number} of {self.run_id}"


class Feedback(WorkspaceScoped):
    """A user's thumbs on a fire's answer; calibration compares it with the verifier's score."""

    class Rating(models.TextChoices):
        UP = "up"
        DOWN = "down"

    fire = models.ForeignKey("fires.Fire", on_delete=models.CASCADE, related_name="feedback")
    rating = models.CharField(max_length=8, choices=Rating.choices)
    comment = models.TextField(blank=True)
    verifier_score = models.FloatField(null=True, blank=True, help_text="the fire's verifier score when given")
    author = models.CharField(max_length=200, blank=True)

    class Meta:
        db_table = "harness_feedback"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="feedback_ws_created")]

    def __str__(self):
        return f"{self.rating} on {self.fire_id}"


def contracts_problems(contracts) -> list[str]:
    """What is wrong with per-workflow contract thresholds (empty: nothing): a workflow or field the
    harness does not know, a count that is not a whole number from 0 to 100,000, a flag that is not a
    boolean."""
    if not isinstance(contracts, dict):
        return ["an object by workflow, e.g. {\"chat\": {\"min_output_chars\": 80}}"]
    problems = []
    for workflow, fields in contracts.items():
        if workflow not in WORKFLOWS:
            problems.append(f"unknown workflow {workflow!r} (one of {', '.join(WORKFLOWS)})")
        elif not isinstance(fields, dict):
            problems.append(f"{workflow}: an object of thresholds")
        else:
            for name, value in fields.items():
                if name not in CONTRACT_FIELDS:
                    problems.append(f"{workflow}: unknown threshold {name!r} (one of {', '.join(CONTRACT_FIELDS)})")
                elif name == "require_citations" and not isinstance(value, bool):
                    problems.append(f"{workflow}.{name}: true or false")
                elif name != "require_citations" and (isinstance(value, bool) or not isinstance(value, int)
                                                      or not 0 <= value <= 100_000):
                    problems.append(f"{workflow}.{name}: a whole number from 0 to 100000")
    return problems
