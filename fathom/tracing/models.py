"""Trace events (seed 004's tracing contract): one row per thing that happened, all rows of one
traced operation sharing a `trace_id`, each span's rows sharing a `span_id` whose parent is named."""

from decimal import Decimal

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from fathom.tenancy import WorkspaceScoped
from fathom.tracing.names import EVENT_WORDS


class SafeJSONEncoder(DjangoJSONEncoder):
    """Trace payloads must never fail to save: anything JSON cannot say is written as its repr."""

    def default(self, o):
        try:
            return super().default(o)
        except TypeError:
            return repr(o)


class TraceEvent(WorkspaceScoped):
    """Kinds: `trace.prompt.received`, `llm.call.started|completed|failed`, `worker.tool.call|result`,
    `celery.task.started|completed|failed`, `llm.call.retry`, and `<name>.started|completed|failed`
    for any named span. `at` is when it happened (`created_at` is when the batch was written)."""

    at = models.DateTimeField()
    kind = models.CharField(max_length=120)
    name = models.CharField(max_length=120, help_text="the span's name, e.g. llm.call")
    status = models.CharField(max_length=8, blank=True, help_text="ok or error on a span's last event")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    run_id = models.CharField(max_length=64, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    call_id = models.CharField(max_length=64, blank=True)
    actor_id = models.CharField(max_length=200, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    model = models.CharField(max_length=200, blank=True)
    provider = models.CharField(max_length=32, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=16, decimal_places=8, default=Decimal(0))
    error = models.TextField(blank=True)
    payload = models.JSONField(default=dict, blank=True, encoder=SafeJSONEncoder)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(fields=["workspace", "trace_id", "at"], name="traceevent_ws_trace_at"),
            models.Index(fields=["workspace", "run_id"], name="traceevent_ws_run",
                         condition=~models.Q(run_id="")),
            # The list of traces reads root spans; usage reads the end events of model calls.
            models.Index(fields=["workspace", "-at"], name="traceevent_ws_roots", condition=models.Q(parent_span_id="")),
            models.Index(fields=["workspace", "at"], name="traceevent_ws_llm_ends",
                         condition=models.Q(name="llm.call") & ~models.Q(status="")),
            # Retention deletes the oldest events in batches (fathom.tracing.services.traces_prune).
            models.Index(fields=["at"], name="traceevent_at"),
            # What Festinger injected into prompts, newest first (festinger.selectors.recollections_list).
            models.Index(fields=["workspace", "-at"], name="traceevent_ws_recollections",
                         condition=models.Q(kind="festinger.recollection")),
        ]

    def __str__(self):
        return f"{self.kind} {self.trace_id[:8]}/{self.span_id}"


class TraceManager(models.Manager):
    def get_queryset(self):
        starts = [start for start, _, _ in EVENT_WORDS.values()]
        return super().get_queryset().filter(parent_span_id="", status="").filter(
            models.Q(kind__in=starts) | models.Q(kind__endswith=".started"))


class Trace(TraceEvent):
    """A trace, as the admin lists it: the first event of its root span stands for the whole trace."""

    objects = TraceManager()

    class Meta:
        proxy = True

    def __str__(self):
        return f"trace {self.trace_id}"
