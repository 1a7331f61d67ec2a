"""Traces and usage over REST: the list of traces, one trace as a span tree with model-call counts
per actor and totals of tokens and cost, and tokens and cost per day."""

from datetime import timedelta

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.api.pagination import StrictCursorPagination
from fathom.tracing import selectors

MONEY = {"max_digits": 16, "decimal_places": 8}
USAGE_MAX_DAYS = 366


class Counts(serializers.Serializer):
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(**MONEY)


class SpanOutput(Counts):
    span_id = serializers.CharField()
    parent_span_id = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField(help_text="ok, error, or running (no end event yet)")
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    duration_ms = serializers.FloatField(allow_null=True)
    actor_id = serializers.CharField()
    run_id = serializers.CharField()
    task_id = serializers.CharField()
    call_id = serializers.CharField()
    model = serializers.CharField()
    provider = serializers.CharField()
    error = serializers.CharField()
    attributes = serializers.JSONField()
    events = serializers.ListField(child=serializers.JSONField(), help_text="point events inside the span")
    children = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_children(self, node):
        return SpanOutput(node["children"], many=True).data


class ActorOutput(Counts):
    actor_id = serializers.CharField()
    model_calls = serializers.IntegerField()
    failed_model_calls = serializers.IntegerField()


class TraceTotals(Counts):
    spans = serializers.IntegerField()
    model_calls = serializers.IntegerField()
    failed_model_calls = serializers.IntegerField()
    tool_calls = serializers.IntegerField()


class TraceOutput(serializers.Serializer):
    trace_id = serializers.CharField()
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField()
    status = serializers.CharField()
    totals = TraceTotals()
    actors = ActorOutput(many=True, help_text="model calls, tokens and cost per actor")
    spans = SpanOutput(many=True, help_text="root spans; each holds its children")


class TraceSummaryOutput(TraceTotals):
    trace_id = serializers.CharField()
    name = serializers.CharField(help_text="the root span's name")
    actor_id = serializers.CharField()
    run_id = serializers.CharField()
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField()
    status = serializers.CharField()


class TracePagination(StrictCursorPagination):
    ordering = ("-at", "-id")
    max_page_size = 200


class TraceListView(generics.ListAPIView):
    """The workspace's traces, newest first: one row per trace with its counts and totals."""

    serializer_class = TraceSummaryOutput
    pagination_class = TracePagination

    @extend_schema(parameters=[OpenApiParameter("actor_id", str), OpenApiParameter("run_id", str)],
                   summary="Traces, newest first, with model calls, tool calls, tokens and cost")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def list(self, request, *args, **kwargs):
        params = request.query_params
        roots = self.paginate_queryset(selectors.traces_list(
            workspace=request.workspace, actor_id=params.get("actor_id", ""), run_id=params.get("run_id", "")))
        totals = selectors.traces_totals(workspace=request.workspace, trace_ids=[r.trace_id for r in roots])
        rows = []
        for root in roots:
            counts = totals[root.trace_id]
            rows.append({"trace_id": root.trace_id, "name": root.name, "actor_id": root.actor_id,
                         "run_id": root.run_id, "started_at": root.at, **counts,
                         "status": "error" if counts["errors"] else "ok"})
        return self.get_paginated_response(TraceSummaryOutput(rows, many=True).data)


class TraceDetailView(APIView):
    @extend_schema(responses=TraceOutput,
                   summary="A trace: its span tree, model calls per actor, totals of tokens and cost")
    def get(self, request, trace_id: str):
        return Response(TraceOutput(selectors.trace_get(workspace=request.workspace, trace_id=trace_id)).data)


class UsageLine(Counts):
    calls = serializers.IntegerField()
    failed = serializers.IntegerField()


class UsageModelLine(UsageLine):
    role = serializers.CharField()
    provider = serializers.CharField()
    model = serializers.CharField()


class UsageDay(UsageLine):
    day = serializers.DateField()
    by_model = UsageModelLine(many=True)


class UsageOutput(serializers.Serializer):
    from_ = serializers.DateField()
    to = serializers.DateField()
    totals = UsageLine()
    days = UsageDay(many=True)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields


class UsageView(APIView):
    class Input(serializers.Serializer):
        from_ = serializers.DateField(required=False, help_text="first day (UTC), default: 29 days before `to`")
        to = serializers.DateField(required=False, help_text="last day (UTC, included), default: today")

        def get_fields(self):
            fields = super().get_fields()
            fields["from"] = fields.pop("from_")
            return fields

        def validate(self, data):
            until = data.get("to") or timezone.now().date()
            since = data.get("from") or until - timedelta(days=29)
            if since > until:
                raise serializers.ValidationError({"from": "must not be after `to`"})
            if (until - since).days >= USAGE_MAX_DAYS:
                raise serializers.ValidationError({"from": f"a range covers at most {USAGE_MAX_DAYS} days"})
            return {"since": since, "until": until}

    @extend_schema(parameters=[Input], responses=UsageOutput,
                   summary="Model calls, tokens and cost per day, by role and model",
                   description="Computed from the trace events, so only the days trace retention keeps "
                               "(FATHOM_TRACE_RETENTION_DAYS) are counted: older days read as no calls.")
    def get(self, request):
        data = self.Input(data=request.query_params)
        data.is_valid(raise_exception=True)
        usage = selectors.usage_by_day(workspace=request.workspace, **data.validated_data)
        return Response(UsageOutput(usage).data)
