"""One run of a producer: who started it, what it read, the proposals it drafted."""

from django.db import models
from django.db.models import Q

from fathom.models import WorkspaceScoped


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
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="producerrun_ws_created")]
        constraints = [models.UniqueConstraint(fields=["workspace", "producer", "window_start"],
                                               condition=Q(origin="pressure"), name="producerrun_one_per_window")]

    def __str__(self):
        return f"{self.producer} run {self.pk} ({self.status})"
