"""The loop detector's thresholds (one row per workspace, editable in admin, read again by every
process as soon as it is saved) and its record of every detection and mitigation."""

from django.db import models

from fathom.models import WorkspaceScoped


class LoopConfig(WorkspaceScoped):
    """How the loop detector judges a conversation of this workspace, and how it escalates."""

    enabled = models.BooleanField(default=True)
    roles = models.CharField(max_length=200, default="main,proxy",
                             help_text="model roles whose calls are watched, comma-separated (proxy: the proxy's)")
    repeat_count = models.PositiveIntegerField(
        default=3, help_text="the same (normalised) assistant output this many times within the window is a loop")
    window = models.PositiveIntegerField(default=12, help_text="recent outputs and tool calls remembered per conversation")
    cycle_max_period = models.PositiveIntegerField(
        default=3, help_text="the longest sequence of tool calls whose repetition is a cycle")
    cycle_repeats = models.PositiveIntegerField(default=3, help_text="repetitions of that sequence that make a cycle")
    stream_min_chars = models.PositiveIntegerField(
        default=12, help_text="the shortest piece of text whose repetition inside one answer counts")
    stream_max_chars = models.PositiveIntegerField(
        default=400, help_text="the longest piece of text whose repetition inside one answer is looked for")
    stream_repeats = models.PositiveIntegerField(
        default=4, help_text="a piece repeated this many times in a row inside one answer cuts the stream")
    temperature_boost = models.FloatField(default=0.3, help_text="added to the temperature per detection")
    max_temperature = models.FloatField(default=1.5)
    forbid_after = models.PositiveIntegerField(
        default=2, help_text="detections after which a system note forbids the repeated action")
    truncate_after = models.PositiveIntegerField(
        default=3, help_text="detections after which the repeated turns are dropped from the history")
    breaker_after = models.PositiveIntegerField(
        default=4, help_text="detections after which the circuit breaker opens")
    breaker_cooldown_seconds = models.PositiveIntegerField(
        default=300, help_text="how long an open breaker answers without calling the model")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "loop detector configuration"
        verbose_name_plural = "loop detector configuration"
        constraints = [models.UniqueConstraint(fields=["workspace"], name="festinger_loopconfig_one_per_workspace")]

    def __str__(self):
        return f"loop detector configuration of {self.workspace}"


class LoopEvent(WorkspaceScoped):
    """One detection or mitigation in one conversation."""

    class Kind(models.TextChoices):
        REPEATED_OUTPUT = "repeated_output", "detected: the same output repeated"
        TOOL_CYCLE = "tool_cycle", "detected: the same tool calls repeating"
        STREAM_REPETITION = "stream_repetition", "detected: repetition inside one answer (stream cut)"
        TEMPERATURE_BOOST = "temperature_boost", "mitigation: temperature raised"
        FORBID_ACTION = "forbid_action", "mitigation: the repeated action forbidden"
        TRUNCATE_HISTORY = "truncate_history", "mitigation: the repeated turns dropped"
        BREAKER_OPENED = "breaker_opened", "mitigation: circuit breaker opened"
        BREAKER_ANSWERED = "breaker_answered", "mitigation: answered by the open breaker"
        BREAKER_CLOSED = "breaker_closed", "circuit breaker closed after its cool-down"

    session = models.CharField(max_length=128, db_index=True, help_text="the conversation")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    level = models.PositiveIntegerField(default=0, help_text="detections in this conversation so far")
    model = models.CharField(max_length=200, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)
    trace_id = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="festinger_loopevent_recent")]

    def __str__(self):
        return f"{self.kind} in {self.session} (level {self.level})"


# What the record's kinds are: a detection, or a mitigation (a breaker closing after its cool-down is neither).
DETECTIONS = (LoopEvent.Kind.REPEATED_OUTPUT, LoopEvent.Kind.TOOL_CYCLE, LoopEvent.Kind.STREAM_REPETITION)
MITIGATIONS = (LoopEvent.Kind.TEMPERATURE_BOOST, LoopEvent.Kind.FORBID_ACTION, LoopEvent.Kind.TRUNCATE_HISTORY,
               LoopEvent.Kind.BREAKER_OPENED, LoopEvent.Kind.BREAKER_ANSWERED)
