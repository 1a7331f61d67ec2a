"""REST for autonomy: pressure (now, breakdown, series), the settings (the switch), the decisions,
the self-direction inbox and the crystal of directives."""

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.api.pagination import CreatedCursorPagination, page_of
from fathom.auth import request_actor
from fathom.models import Role
from harness.autonomy import selectors, services
from harness.autonomy.models import AutonomyDecision, AutonomyMode, AutonomySettings, InboxMark
from harness.autonomy.pressure import SIGNALS, pressure_read
from lake.models import Delta


class SignalOutput(serializers.Serializer):
    raw = serializers.FloatField(help_text="the reading, in the signal's unit")
    scaled = serializers.FloatField(help_text="raw / saturation, capped at 1")
    weight = serializers.FloatField()
    contribution = serializers.FloatField(help_text="scaled x weight / sum of weights: its share of the pressure")


class PressureNowOutput(serializers.Serializer):
    at = serializers.DateTimeField()
    value = serializers.FloatField(help_text="0 to 1")
    breakdown = serializers.DictField(child=SignalOutput(), help_text="by signal name")


class PressureSampleOutput(serializers.Serializer):
    at = serializers.DateTimeField()
    value = serializers.FloatField()


class SignalInfoOutput(serializers.Serializer):
    name = serializers.CharField()
    meaning = serializers.CharField()
    saturation = serializers.FloatField()
    unit = serializers.CharField()


class PressureOutput(serializers.Serializer):
    mode = serializers.ChoiceField(choices=AutonomyMode.choices)
    threshold = serializers.FloatField()
    now = PressureNowOutput()
    series = PressureSampleOutput(many=True, help_text="the beat's samples of the kept window, oldest first")
    signals = SignalInfoOutput(many=True)


class PressureView(APIView):
    @extend_schema(responses=PressureOutput, summary="Autonomy pressure: now, its breakdown by signal, the series")
    def get(self, request):
        settings = services.autonomy_settings_get(workspace=request.workspace)
        gates = services.gates_read(settings=settings, now=timezone.now())
        reading = pressure_read(settings=settings, day_start=gates.day_start)
        series = selectors.pressure_series(workspace=request.workspace, hours=settings.series_hours)
        return Response(PressureOutput({
            "mode": settings.mode, "threshold": settings.threshold,
            "now": {"at": reading.at, "value": reading.value, "breakdown": reading.breakdown},
            "series": [{"at": at, "value": value} for at, value in series],
            "signals": [{"name": s.name, "meaning": s.meaning, "saturation": s.saturation, "unit": s.unit}
                        for s in SIGNALS]}).data)


@extend_schema_field({"type": "string", "pattern": r"^\d{2}:\d{2}$", "nullable": True,
                     "description": "a local time, HH:MM, in the settings' time_zone"})
class LocalTimeField(serializers.TimeField):
    """A wall-clock time without a zone (quiet hours are read in the workspace's time zone)."""

    def __init__(self, **kwargs):
        super().__init__(format="%H:%M", input_formats=["%H:%M", "%H:%M:%S"], allow_null=True, required=False,
                         **kwargs)


class SettingsOutput(serializers.ModelSerializer):
    quiet_start = LocalTimeField(help_text="no autonomous Sit from this local time ...")
    quiet_end = LocalTimeField(help_text="... until this one (may wrap midnight)")

    class Meta:
        model = AutonomySettings
        fields = list(services.SETTINGS_FIELDS) + ["session", "updated_at"]


class SettingsInput(serializers.ModelSerializer):
    quiet_start = LocalTimeField(help_text="no autonomous Sit from this local time ...")
    quiet_end = LocalTimeField(help_text="... until this one (may wrap midnight)")

    class Meta:
        model = AutonomySettings
        fields = list(services.SETTINGS_FIELDS)


class SettingsView(APIView):
    """The switch (`mode`: off, observe, on) and its limits; owner or operator only."""

    read_role = Role.OPERATOR
    write_role = Role.OPERATOR

    @extend_schema(responses=SettingsOutput, summary="Autonomy settings of this workspace")
    def get(self, request):
        return Response(SettingsOutput(services.autonomy_settings_get(workspace=request.workspace)).data)

    @extend_schema(request=SettingsInput, responses=SettingsOutput,
                   summary="Change autonomy settings (any subset of the fields)")
    def put(self, request):
        data = SettingsInput(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        settings = services.autonomy_settings_update(workspace=request.workspace, **data.validated_data)
        return Response(SettingsOutput(settings).data)


class DecisionOutput(serializers.ModelSerializer):
    words = serializers.CharField(read_only=True, help_text="the decision in words, as at its sweep")

    class Meta:
        model = AutonomyDecision
        fields = ["id", "created_at", "mode", "action", "reason", "words", "detail", "opens_at", "pressure",
                  "breakdown", "window_start",
                  "scheduled", "sit_state", "start_attempts", "focus", "focus_source", "focus_error", "focus_tokens",
                  "session", "trigger"]


class DecisionListView(generics.ListAPIView):
    """Every decision the sweep took (sit, would_sit, skip) and why, newest first."""

    serializer_class = DecisionOutput

    def get_queryset(self):
        action = self.request.query_params.get("action", "")
        if action and action not in AutonomyDecision.Action.values:
            raise serializers.ValidationError({"action": [f"one of {', '.join(AutonomyDecision.Action.values)}"]})
        return selectors.decisions_list(workspace=self.request.workspace, action=action,
                                        reason=self.request.query_params.get("reason", ""))


class DecisionPageOutput(serializers.Serializer):
    next = serializers.URLField(allow_null=True, help_text="the next page: older decisions")
    previous = serializers.URLField(allow_null=True)
    results = DecisionOutput(many=True)


class StatusNowOutput(serializers.Serializer):
    at = serializers.DateTimeField()
    pressure = serializers.FloatField(allow_null=True, help_text="null while autonomy is off")
    action = serializers.CharField(help_text="sit, would_sit or skip")
    reason = serializers.CharField()
    words = serializers.CharField(help_text="what the sweep would decide now, and why, in words")
    opens_at = serializers.DateTimeField(allow_null=True, help_text="when the gate holding a Sit back opens")


class ProducerRunEffectOutput(serializers.Serializer):
    id = serializers.IntegerField()
    producer = serializers.CharField()
    mode = serializers.CharField()
    origin = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    pressure_before = serializers.FloatField(allow_null=True, help_text="the last sample before it was queued")
    pressure_after = serializers.FloatField(allow_null=True, help_text="the first sample after it finished")
    words = serializers.SerializerMethodField()

    def get_words(self, run) -> str:
        return selectors.producer_run_words(run)


class StatusOutput(serializers.Serializer):
    mode = serializers.ChoiceField(choices=AutonomyMode.choices)
    threshold = serializers.FloatField()
    idle_minutes = serializers.IntegerField()
    window_minutes = serializers.IntegerField()
    now = StatusNowOutput()
    decisions = DecisionPageOutput(help_text="the latest sweeps' decisions, newest first: a page, as a list "
                                             "endpoint answers it (`?page_size=`, `?cursor=`)")
    producer_runs = ProducerRunEffectOutput(many=True, help_text="the newest producer runs and their effect on "
                                                                 "the pressure")


class StatusDecisionPagination(CreatedCursorPagination):
    page_size = 10
    max_page_size = 100


class StatusView(APIView):
    """Autonomy explains itself: what the sweep would decide now and why (in words, with when the
    gate holding a Sit back opens), the latest decisions and the producers' effect on pressure."""

    @extend_schema(parameters=[OpenApiParameter("cursor", str, description="a page's `next` or `previous` cursor"),
                               OpenApiParameter("page_size", int, description="decisions a page (default 10, up to "
                                                                               "100)")],
                   responses=StatusOutput, summary="Why autonomy does what it does, in words")
    def get(self, request):
        decisions = page_of(selectors.decisions_list(workspace=request.workspace),
                            pagination=StatusDecisionPagination(), request=request, view=self)
        settings = services.autonomy_settings_get(workspace=request.workspace)
        now = timezone.now()
        verdict, reading = services.autonomy_now(settings=settings, now=now)
        return Response(StatusOutput({
            "mode": settings.mode, "threshold": settings.threshold, "idle_minutes": settings.idle_minutes,
            "window_minutes": settings.window_minutes,
            "now": {"at": now, "pressure": reading.value if reading else None, "action": verdict.action,
                    "reason": verdict.reason, "words": verdict.words, "opens_at": verdict.opens_at},
            "decisions": decisions,
            "producer_runs": selectors.producer_runs_with_effect(workspace=request.workspace)}).data)


class InboxItemOutput(serializers.ModelSerializer):
    kind = serializers.SerializerMethodField(help_text="directive, reflection or transcript")
    state = serializers.SerializerMethodField(help_text="new, acknowledged, dismissed or acted")
    trigger = serializers.SerializerMethodField(help_text="the message acting on it queued, if acted")

    class Meta:
        model = Delta
        fields = ["id", "kind", "state", "created_at", "source", "tags", "content", "trigger"]

    def get_kind(self, delta) -> str:
        return selectors.inbox_kind(delta)

    def get_state(self, delta) -> str:
        return getattr(delta, "inbox_state", None) or "new"

    def get_trigger(self, delta) -> str | None:
        trigger = getattr(delta, "inbox_trigger", None)
        return str(trigger) if trigger else None


class InboxView(generics.ListAPIView):
    """Reflections, Sit transcripts and directives for the operator to read asynchronously."""

    serializer_class = InboxItemOutput

    def get_queryset(self):
        state = self.request.query_params.get("state", "")
        kind = self.request.query_params.get("kind", "")
        states = ["new", *InboxMark.State.values]
        kinds = ["directive", "reflection", "transcript"]
        if state and state not in states:
            raise serializers.ValidationError({"state": [f"one of {', '.join(states)}"]})
        if kind and kind not in kinds:
            raise serializers.ValidationError({"kind": [f"one of {', '.join(kinds)}"]})
        return selectors.inbox_items(workspace=self.request.workspace, state=state, kind=kind)


class InboxMarkOutput(serializers.ModelSerializer):
    class Meta:
        model = InboxMark
        fields = ["delta_id", "state", "actor", "trigger", "updated_at"]


class InboxItemView(APIView):
    """Acknowledge, dismiss, or act on an inbox item (act queues a fire on it in the autonomy session)."""

    class Input(serializers.Serializer):
        action = serializers.ChoiceField(choices=list(services.INBOX_ACTIONS))

    @extend_schema(request=Input, responses=InboxMarkOutput, summary="Acknowledge, dismiss or act on an inbox item")
    def post(self, request, delta_id):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        mark = services.inbox_mark(workspace=request.workspace, delta_id=delta_id,
                                   action=data.validated_data["action"], actor=request_actor(request))
        return Response(InboxMarkOutput(mark).data)


class DirectiveListView(generics.ListAPIView):
    """The crystal of directives: what Fathom has named for itself over time, newest first."""

    serializer_class = InboxItemOutput

    def get_queryset(self):
        return selectors.directives_list(workspace=self.request.workspace)
