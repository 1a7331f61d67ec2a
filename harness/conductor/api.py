"""REST for conductor runs: start one (202), read it, cancel it, its graph, its events (SSE or JSON)."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from harness.conductor import selectors, services
from harness.conductor.events import run_channel
from harness.conductor.models import AgendaItem, CapabilityCall, Decision, Run
from harness.conductor.services import MAX_OBJECTIVE_CHARS
from harness.runtime.sse import EVENT_STREAM_PARAMETERS, EventStreamRenderer, numbered_events_answer


class RunAgendaItemOutput(serializers.ModelSerializer):
    class Meta:
        model = AgendaItem
        fields = ["number", "capability", "input", "depends_on", "state", "source", "result", "merged"]


class RunCapabilityCallOutput(serializers.ModelSerializer):
    item = serializers.IntegerField(source="item.number")

    class Meta:
        model = CapabilityCall
        fields = ["call_id", "item", "worker", "status", "attempts", "task_id", "fire", "result", "model_calls",
                  "started_at", "finished_at"]


class RunDecisionOutput(serializers.ModelSerializer):
    class Meta:
        model = Decision
        fields = ["number", "kind", "action", "reason", "payload", "error", "llm_call_id", "created_at"]


class ConductorRunSummaryOutput(serializers.ModelSerializer):
    class Meta:
        model = Run
        fields = ["id", "objective", "status", "capabilities", "answer", "decisions_made", "trace_id", "created_at",
                  "bootstrapped_at", "finished_at"]


class ConductorRunOutput(ConductorRunSummaryOutput):
    agenda = RunAgendaItemOutput(many=True, read_only=True)
    calls = RunCapabilityCallOutput(many=True, read_only=True)
    decisions = RunDecisionOutput(many=True, read_only=True)

    class Meta(ConductorRunSummaryOutput.Meta):
        fields = ConductorRunSummaryOutput.Meta.fields + ["canon", "cancel_requested_at", "last_event_seq", "agenda", "calls",
                                                 "decisions"]


class RunGraphNodeOutput(serializers.Serializer):
    kind = serializers.CharField(help_text="prompt, conductor, worker or tool")
    children = serializers.ListField(child=serializers.DictField(), help_text="nodes one level down")


class RunGraphOutput(serializers.Serializer):
    run_id = serializers.CharField()
    trace_id = serializers.CharField()
    status = serializers.CharField()
    totals = serializers.DictField(help_text="model calls (all, conductor, bootstrap, decision), worker calls by "
                                             "kind, tool calls")
    actors = serializers.ListField(child=serializers.DictField(), help_text="[{actor_id, model_calls}]")
    tree = RunGraphNodeOutput(help_text="prompt -> conductor -> worker branches -> tool nodes")


class RunListCreateView(generics.ListAPIView):
    serializer_class = ConductorRunSummaryOutput

    class Input(serializers.Serializer):
        objective = serializers.CharField(max_length=MAX_OBJECTIVE_CHARS)

    def get_queryset(self):
        return selectors.runs_list(workspace=self.request.workspace)

    @extend_schema(request=Input, responses={202: ConductorRunSummaryOutput},
                   summary="Start a conductor run of an objective (it runs on workers)")
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        run = services.run_create(workspace=request.workspace, objective=data.validated_data["objective"])
        return Response(ConductorRunSummaryOutput(run).data, status=status.HTTP_202_ACCEPTED)


class RunDetailView(APIView):
    @extend_schema(responses=ConductorRunOutput, summary="A run: agenda, capability calls, decisions, canon, answer")
    def get(self, request, run_id):
        run = selectors.run_get(workspace=request.workspace, run_id=run_id)
        return Response(ConductorRunOutput(selectors.run_with_agenda(run=run)).data)


class RunCancelView(APIView):
    @extend_schema(request=None, responses={202: ConductorRunSummaryOutput},
                   summary="Cancel a run (its workers stop before their next model call or command)")
    def post(self, request, run_id):
        run = services.run_cancel(run=selectors.run_get(workspace=request.workspace, run_id=run_id))
        return Response(ConductorRunSummaryOutput(run).data, status=status.HTTP_202_ACCEPTED)


class RunGraphView(APIView):
    @extend_schema(responses=RunGraphOutput,
                   summary="The run's call graph: prompt -> conductor -> workers -> tools, model calls per actor")
    def get(self, request, run_id):
        return Response(selectors.run_graph(run=selectors.run_get(workspace=request.workspace, run_id=run_id)))


class RunEventOutput(serializers.Serializer):
    seq = serializers.IntegerField()
    kind = serializers.CharField()
    data = serializers.DictField(child=serializers.JSONField())
    created_at = serializers.DateTimeField()


class RunEventsOutput(serializers.Serializer):
    events = RunEventOutput(many=True)
    last_seq = serializers.IntegerField()
    next = serializers.CharField(help_text="the query that polls for what comes next")


def run_event_payload(event) -> dict:
    return {"seq": event.seq, "kind": event.kind, "data": event.data, "created_at": event.created_at}


class RunEventsView(APIView):
    """The run's events: Server-Sent Events with `Accept: text/event-stream` (resumable with
    Last-Event-ID), otherwise a JSON page for polling (`?after=<seq>`)."""

    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        parameters=EVENT_STREAM_PARAMETERS,
        responses={(200, "application/json"): RunEventsOutput, (200, "text/event-stream"): str},
        summary="Run events (SSE or JSON polling)",
    )
    def get(self, request, run_id):
        run = selectors.run_get(workspace=request.workspace, run_id=run_id)

        def read_after(*, after: int, limit: int):
            return selectors.run_events_after(run_id=run.pk, after=after, limit=limit)

        return numbered_events_answer(request, channel=run_channel(run.pk), read_after=read_after,
                                      payload=run_event_payload)

