"""Festinger's world model (seed 002), per workspace.

- `Concept` is the seed's SOAS row: one token of the workspace's vocabulary. Dimensions are concepts.
- `Edge` is the seed's URD row ("IN"): concept IN parent within dimension. The database enforces one
  edge per (concept, parent, dimension) and one parent per (concept, dimension): that second index is
  the graph's contradiction resistance. It does not make a dimension acyclic (qa0 IN qb0 and qb0 IN
  qa0 each give their concept one parent): `festinger.services.place` refuses an edge whose parent
  descends from its concept in that dimension, under a lock per dimension, and `fathom festinger
  check` reports any cycle already in the data. A dimension's root is the edge whose concept, parent
  and dimension are the dimension itself.
- `Conflict` is the seed's resolution queue: a fact the unique index rejected, with its collision type,
  or one that would have closed a cycle (`cycle`).
- `EdgeHistory` keeps every edge a resolution (or an operator) removed or moved: nothing is silently
  deleted.
- `WorldConfig` is the seed's runtime `config` table, one row per workspace, editable in admin.
- `ResolutionRun` records each run of the resolution job.
"""

from django.db import models
from django.db.models import F, Q

from fathom.models import WorkspaceScoped

TOKEN_MAX_LENGTH = 255


class Source(models.TextChoices):
    CLOUD_LLM = "cloud_llm", "cloud LLM (write path)"
    INFERRED = "inferred", "inferred (cue pattern)"
    FESTINGER = "festinger", "festinger (resolution job)"
    GUTASK = "gutask", "gutask (iknowthat)"


class CollisionType(models.TextChoices):
    ISA_ISA = "isa_isa", "ISA + ISA (dimension too coarse)"
    ISPART_ISPART = "ispart_ispart", "ISPART + ISPART (factual contradiction)"
    MISCLASSIFICATION = "misclassification", "ISA + ISPART (misclassification)"
    CYCLE = "cycle", "cycle (the parent descends from the concept in that dimension)"


class ConflictStatus(models.TextChoices):
    PENDING = "pending", "pending"
    RESOLVED = "resolved", "resolved"
    DISMISSED = "dismissed", "dismissed"


class Concept(WorkspaceScoped):
    """SOAS: a token of the workspace's vocabulary, with how often and how recently it was seen."""

    token = models.CharField(max_length=TOKEN_MAX_LENGTH, help_text="lowercase, compound runs joined with _")
    encounter_count = models.BigIntegerField(default=0)
    last_seen = models.DateTimeField(null=True, blank=True)
    saliency = models.FloatField(default=0.0, help_text="log-scaled encounter saliency; 0 = common English")
    novelty = models.FloatField(default=0.0, help_text="domain specificity; 1.0 once the write path confirms it")
    is_common = models.BooleanField(
        default=False, help_text="pre-seeded from the English dictionary: its saliency stays 0")

    class Meta:
        ordering = ["token"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "token"], name="festinger_concept_unique_token"),
            models.CheckConstraint(condition=~Q(token=""), name="festinger_concept_token_not_empty"),
        ]

    def __str__(self):
        return self.token


class Edge(WorkspaceScoped):
    """URD: `concept` IN `parent` within `dimension`; `is_isa` says ISA (type) or ISPART (membership)."""

    concept = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="edges")
    parent = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="+")
    dimension = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="+")
    is_isa = models.BooleanField()
    confidence = models.FloatField()
    last_confirmed = models.DateTimeField()
    source = models.CharField(max_length=16, choices=Source.choices)

    class Meta:
        ordering = ["concept_id", "-dimension_id"]
        constraints = [
            models.UniqueConstraint(fields=["concept", "parent", "dimension"], name="festinger_edge_unique_triple"),
            # One parent per concept per dimension: the seed's contradiction index. Not acyclicity on its
            # own: services.place walks the ancestors before an insert (see the module docstring).
            models.UniqueConstraint(fields=["concept", "dimension"], name="festinger_edge_one_parent_per_dimension"),
            models.CheckConstraint(condition=Q(confidence__gte=0.0, confidence__lte=1.0),
                                   name="festinger_edge_confidence_0_1"),
            # The only self-reference allowed is a dimension's root (concept = parent = dimension).
            models.CheckConstraint(condition=~Q(concept=F("parent")) | Q(concept=F("dimension")),
                                   name="festinger_edge_self_reference_only_roots"),
        ]

    def __str__(self):
        return f"{self.concept} IN {self.parent} [{self.dimension}]"

    @property
    def is_root(self) -> bool:
        return self.concept_id == self.parent_id == self.dimension_id


class Conflict(WorkspaceScoped):
    """The resolution queue: an incoming fact that collided with the edge already holding
    (concept, dimension). The world model stands unchanged until the job or an operator decides."""

    concept = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="conflicts")
    dimension = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="+")
    existing_parent = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="+")
    existing_is_isa = models.BooleanField()
    incoming_parent = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="+")
    incoming_is_isa = models.BooleanField()
    incoming_confidence = models.FloatField()
    incoming_source = models.CharField(max_length=16, choices=Source.choices)
    collision_type = models.CharField(max_length=20, choices=CollisionType.choices)
    status = models.CharField(max_length=12, choices=ConflictStatus.choices, default=ConflictStatus.PENDING)
    priority = models.BooleanField(default=False, help_text="a manual (gutask) fact: reviewed first")
    resolution = models.JSONField(null=True, blank=True, help_text="what was decided and done")
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True, help_text="why the last resolution attempt failed")
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-priority", "created_at", "id"]
        indexes = [models.Index(fields=["workspace", "status", "-priority", "created_at"],
                                name="festinger_conflict_queue")]
        constraints = [
            # The same rejected fact is queued once while it waits.
            models.UniqueConstraint(fields=["concept", "dimension", "incoming_parent", "incoming_is_isa"],
                                    condition=Q(status="pending"), name="festinger_conflict_pending_once"),
        ]

    def __str__(self):
        return f"#{self.pk} {self.concept} [{self.dimension}] {self.existing_parent} vs {self.incoming_parent}"


class EdgeHistory(WorkspaceScoped):
    """An edge as it was before a resolution or an operator removed or moved it (`created_at` is when)."""

    class Action(models.TextChoices):
        REMOVED = "removed", "removed"
        MOVED = "moved", "moved to another dimension"

    concept = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="edge_history")
    parent = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="+")
    dimension = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="+")
    is_isa = models.BooleanField()
    confidence = models.FloatField()
    last_confirmed = models.DateTimeField()
    source = models.CharField(max_length=16, choices=Source.choices)
    edge_created_at = models.DateTimeField()
    action = models.CharField(max_length=8, choices=Action.choices)
    moved_to = models.ForeignKey(Concept, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                                 help_text="the dimension a moved edge now lives in")
    reason = models.TextField()
    conflict = models.ForeignKey(Conflict, null=True, blank=True, on_delete=models.SET_NULL, related_name="history")
    actor = models.CharField(max_length=200, help_text="festinger, operator:<who>")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "edge history"

    def __str__(self):
        return f"{self.action}: {self.concept} IN {self.parent} [{self.dimension}]"


class WorldConfig(WorkspaceScoped):
    """The seed's runtime configuration, one row per workspace; saving it (through
    `festinger.services.config_update`, which admin uses) moves the resolution job's schedule."""

    saliency_read_threshold = models.FloatField(default=0.5, help_text="saliency above which recollections are looked up")
    saliency_write_threshold = models.FloatField(default=1.2, help_text="saliency above which the writer is asked")
    recollection_confidence_floor = models.FloatField(default=0.6, help_text="edges below this are not recollected")
    recollection_recency_days = models.PositiveIntegerField(default=90, help_text="edges confirmed longer ago are not recollected")
    recollection_max_concepts = models.PositiveIntegerField(default=20, help_text="concepts per recollection block")
    resolution_schedule = models.CharField(max_length=100, default="0 2 * * *",
                                           help_text="cron (minute hour day month weekday, UTC) of the resolution job")
    resolution_enabled = models.BooleanField(default=True, help_text="whether beat runs the resolution job")
    writer_role = models.CharField(max_length=48, default="writer", help_text="model role of the write path")
    resolver_role = models.CharField(max_length=48, default="resolver", help_text="model role of the resolution job")
    writer_max_calls = models.PositiveIntegerField(default=2, help_text="model calls allowed per concept write")
    writer_calls_per_conversation = models.PositiveIntegerField(
        default=4, help_text="writer model calls one conversation may cause (0: none)")
    writer_calls_per_hour = models.PositiveIntegerField(
        default=40, help_text="writer model calls per clock hour in this workspace (0: none)")
    saliency_half_life_days = models.FloatField(
        default=30.0, help_text="a concept's saliency halves for every this many days since it was last seen")
    # The last batch of encounter counts added to the concepts (festinger.cache.counts_flush), set in the
    # same transaction: a batch whose flush died before Redis forgot it is not added twice.
    counts_batch = models.CharField(max_length=32, blank=True, default="", editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "Festinger configuration"
        verbose_name_plural = "Festinger configuration"
        constraints = [models.UniqueConstraint(fields=["workspace"], name="festinger_config_one_per_workspace")]

    def __str__(self):
        return f"Festinger configuration of {self.workspace}"


class ResolutionRun(WorkspaceScoped):
    """One run of the resolution job: who started it, when, and what it did."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        FINISHED = "finished", "finished"
        SKIPPED = "skipped", "skipped (another run was in progress)"
        FAILED = "failed", "failed"

    trigger = models.CharField(max_length=200, help_text="schedule, or operator:<who>")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    processed = models.PositiveIntegerField(default=0)
    resolved = models.PositiveIntegerField(default=0)
    dismissed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=255, blank=True, default="",
                               help_text="a scheduled run's Celery task: delivered again, it carries this run on")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["task_id"], condition=~models.Q(task_id=""),
                                               name="festinger_resolutionrun_task_unique")]

    def __str__(self):
        return f"resolution run #{self.pk} ({self.status})"


# The proxy's model table and the loop detector's rows live beside the code that uses them.
from festinger.loops.models import LoopConfig, LoopEvent  # noqa: E402,F401
from festinger.proxy.models import ProxyRoute  # noqa: E402,F401
