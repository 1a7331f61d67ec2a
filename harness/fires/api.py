"""REST for fires: read one (turns, tool calls, stop reason, trace, counts, cost), list, cancel;
start a Sit; introspect."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from harness.fires import hooks, selectors, services
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.runtime import selectors as runtime_selectors
from harness.runtime.services import harness_settings_get, message_send


class ToolCallOutput(serializers.ModelSerializer):
    class Meta:
        model = FireToolCall
        fields = ["call_id", "name", "arguments", "plan_step", "ok", "result", "latency_ms", "created_at"]


class FireTurnOutput(serializers.ModelSerializer):
    calls = ToolCallOutput(many=True, read_only=True)

    class Meta:
        model = FireTurn
        fields = ["number", "phase", "text", "tool_calls", "forced", "stop_reason", "model", "provider",
                  "input_tokens", "output_tokens", "cost", "latency_ms", "call_id", "calls", "created_at"]


class VerdictOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=Fire.Verdict.choices,
                                     help_text="passed, degraded (failed its checks, no retry left) or unchecked")
    reasons = serializers.ListField(child=serializers.CharField(), help_text="why it is degraded")


class FireSummaryOutput(serializers.ModelSerializer):
    autonomous = serializers.CharField(read_only=True, help_text="the autonomy decision whose Sit this fire is a "
                                                                 "round of (\"\" when no autonomous Sit started it)")
    verdict = VerdictOutput(source="verdict_detail", read_only=True,
                            help_text="the checks' verdict on the answer: degraded answers are delivered marked so")

    class Meta:
        model = Fire
        fields = ["id", "mode", "status", "phase", "stop_reason", "verdict", "session", "turn", "parent", "depth", "question",
                  "autonomous", "model_calls", "input_tokens", "output_tokens", "cost", "trace_id", "created_at",
                  "started_at", "finished_at"]


class FireOutput(FireSummaryOutput):
    """A fire whole, with what its lifecycle hooks add (the quality harness's `quality`)."""

    turns = FireTurnOutput(many=True, read_only=True)
    children = serializers.PrimaryKeyRelatedField(many=True, read_only=True)

    class Meta(FireSummaryOutput.Meta):
        fields = FireSummaryOutput.Meta.fields + [
            "work_set", "disabled_tools", "plan", "plan_events", "response", "review", "writes", "error",
            "cancel_requested_at", "children", "turns"]

    def get_fields(self):
        return {**super().get_fields(), **hooks.output_fields()}


def fire_detail(fire: Fire) -> dict:
    """The fire whole, its trace, and its model calls per role from the trace (`calls_by_role`: every
    call of the fire's trace, the quality harness's, the judge's and the writer's included; the
    fire's own `model_calls` are its main and review calls). Of a fire that runs inside another's trace
    (a conductor's research fire, a child fire: selectors.fire_in_shared_trace), its own part only."""
    return {**FireOutput(selectors.fire_with_journal(fire=fire)).data, "trace": selectors.fire_trace(fire=fire),
            "calls_by_role": selectors.fire_calls_by_role(fire=fire)}


class FireListView(generics.ListAPIView):
    serializer_class = FireSummaryOutput

    def get_queryset(self):
        session_id = self.request.query_params.get("session")
        session = runtime_selectors.session_get(workspace=self.request.workspace,
                                                session_id=session_id) if session_id else None
        return selectors.fires_list(workspace=self.request.workspace, session=session)


class FireDetailView(APIView):
    @extend_schema(responses=FireOutput, summary="A fire: turns, tool calls, stop reason, trace, counts, cost")
    def get(self, request, fire_id):
        return Response(fire_detail(selectors.fire_get(workspace=request.workspace, fire_id=fire_id)))


class FireCancelView(APIView):
    @extend_schema(request=None, responses=FireSummaryOutput,
                   summary="Cancel a fire (it stops before its next model call)")
    def post(self, request, fire_id):
        fire = services.fire_cancel(fire=selectors.fire_get(workspace=request.workspace, fire_id=fire_id))
        return Response(FireSummaryOutput(fire).data, status=status.HTTP_202_ACCEPTED)


class SitOutput(serializers.Serializer):
    trigger_id = serializers.CharField(help_text="the trigger that opens round 1")
    rounds = serializers.IntegerField(help_text="the round cap")


class IntrospectOutput(serializers.Serializer):
    fire_id = serializers.CharField()
    card_id = serializers.CharField(allow_null=True, help_text="the card delta the fire wrote, if any")
    body = serializers.CharField(allow_blank=True)
    cited_ids = serializers.ListField(child=serializers.CharField())
    fire = FireOutput()


class SitView(APIView):
    """Self-directing mode: the prompt opens round 1; each round's respond.next_prompt seeds the
    next, until a round omits it or the round cap is reached."""

    class Input(serializers.Serializer):
        prompt = serializers.CharField(max_length=20_000)
        rounds = serializers.IntegerField(required=False, min_value=1, max_value=50,
                                          help_text="round cap (the workspace's sit_round_cap by default)")

    @extend_schema(request=Input, responses={202: SitOutput}, summary="Start a Sit in this session")
    def post(self, request, session_id):
        session = runtime_selectors.session_get(workspace=request.workspace, session_id=session_id)
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        cap = data.validated_data.get("rounds") or harness_settings_get(workspace_id=session.workspace_id).sit_round_cap
        trigger = message_send(session=session, content=data.validated_data["prompt"], author="self", source="sit",
                               payload={"sit": {"round": 1, "cap": cap}})
        return Response({"trigger_id": str(trigger.pk), "rounds": cap}, status=status.HTTP_202_ACCEPTED)


class IntrospectView(APIView):
    """Fathom calls Fathom: a scoped introspective fire. Returns its card, or 202 and the fire id
    with `"async": true`."""

    class Input(serializers.Serializer):
        question = serializers.CharField(max_length=20_000)
        disabled_tools = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        run_async = serializers.BooleanField(required=False, default=False)

        def to_internal_value(self, data):
            if isinstance(data, dict) and "async" in data and "run_async" not in data:
                data = {**data, "run_async": data["async"]}
            return super().to_internal_value(data)

    @extend_schema(request=Input, responses={200: IntrospectOutput, 202: FireSummaryOutput}, summary="Introspect")
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        fire = services.fire_create(workspace=request.workspace, mode=Fire.Mode.INTROSPECTIVE,
                                    question=data.validated_data["question"],
                                    disabled_tools=data.validated_data["disabled_tools"])
        if data.validated_data["run_async"]:
            services.fire_enqueue(fire=fire)
            return Response(FireSummaryOutput(fire).data, status=status.HTTP_202_ACCEPTED)
        fire = services.fire_run(fire_id=fire.pk)
        body = fire_detail(fire)
        return Response({"fire_id": str(fire.pk), "card_id": fire.writes.get("card"),
                         "body": fire.response.get("body", ""), "cited_ids": fire.response.get("cited_ids", []),
                         "fire": body})
