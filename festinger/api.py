"""REST for Festinger's world model: /iknowthat, the conflict queue with operator overrides, and
running the resolution job now. Views parse, call a service or selector, serialise."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.auth import request_actor
from fathom.models import Role
from festinger import selectors
from festinger.iknowthat import SYNTAX, iknowthat
from festinger.models import CollisionType, Conflict, ConflictStatus, Edge, ResolutionRun
from festinger.resolution import DECISIONS, conflict_apply, conflict_dismiss
from festinger.tasks import resolution_request


class EdgeOutput(serializers.ModelSerializer):
    concept = serializers.CharField(source="concept.token")
    parent = serializers.CharField(source="parent.token")
    dimension = serializers.CharField(source="dimension.token")

    class Meta:
        model = Edge
        fields = ["id", "concept", "parent", "dimension", "is_isa", "confidence", "last_confirmed", "source",
                  "created_at"]


class ConflictOutput(serializers.ModelSerializer):
    concept = serializers.CharField(source="concept.token")
    dimension = serializers.CharField(source="dimension.token")
    existing_parent = serializers.CharField(source="existing_parent.token")
    incoming_parent = serializers.CharField(source="incoming_parent.token")

    class Meta:
        model = Conflict
        fields = ["id", "concept", "dimension", "existing_parent", "existing_is_isa", "incoming_parent",
                  "incoming_is_isa", "incoming_confidence", "incoming_source", "collision_type", "status",
                  "priority", "resolution", "resolved_at", "resolved_by", "error", "attempts", "created_at"]


class RunOutput(serializers.ModelSerializer):
    class Meta:
        model = ResolutionRun
        fields = ["id", "trigger", "status", "created_at", "started_at", "finished_at", "processed", "resolved",
                  "dismissed", "failed", "error"]


FactResult = inline_serializer("FactResult", {
    "result": serializers.ChoiceField(choices=["edge", "conflict"]),
    "edge": EdgeOutput(allow_null=True), "conflict": ConflictOutput(allow_null=True)})


class IKnowThatView(APIView):
    """The manual write path: a fact at confidence 1.0 from gutask; a collision queues a priority conflict."""

    class Input(serializers.Serializer):
        fact = serializers.CharField(max_length=1000, help_text=SYNTAX)

    @extend_schema(request=Input, responses={200: FactResult, 202: FactResult},
                   summary="Store a fact: 'X -isa Y in context of Z' or 'X -ispart Y in context of Z'")
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        body = fact_store(workspace=request.workspace, fact=data.validated_data["fact"])
        return Response(body, status=status.HTTP_202_ACCEPTED if body["conflict"] else status.HTTP_200_OK)


def fact_store(*, workspace, fact: str) -> dict:
    """/iknowthat's answer (FactResult): the edge it wrote, or the conflict it queued."""
    result = iknowthat(workspace=workspace, fact=fact)
    if isinstance(result, Conflict):
        conflict = selectors.conflict_get(workspace=workspace, conflict_id=result.pk)
        return {"result": "conflict", "edge": None, "conflict": ConflictOutput(conflict).data}
    edge = Edge.objects.select_related("concept", "parent", "dimension").get(pk=result.pk)
    return {"result": "edge", "edge": EdgeOutput(edge).data, "conflict": None}


class ConflictListView(generics.ListAPIView):
    """The conflict queue, newest first: pending and recently resolved or dismissed."""

    serializer_class = ConflictOutput

    class Filters(serializers.Serializer):
        status = serializers.ChoiceField(choices=ConflictStatus.choices, required=False)
        collision_type = serializers.ChoiceField(choices=CollisionType.choices, required=False)
        priority = serializers.BooleanField(required=False, allow_null=True, default=None)
        concept = serializers.CharField(required=False, help_text="the concept's token")
        since = serializers.DateTimeField(required=False, help_text="created at or after")

    @extend_schema(parameters=[Filters], summary="List conflicts (filter by status, type, priority, concept, since)")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        filters = self.Filters(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return selectors.conflicts_list(workspace=self.request.workspace, **filters.validated_data)


class ConflictDetailView(APIView):
    @extend_schema(responses=ConflictOutput, summary="One conflict with its resolution")
    def get(self, request, conflict_id: int):
        return Response(ConflictOutput(selectors.conflict_get(workspace=request.workspace,
                                                              conflict_id=conflict_id)).data)


class ConflictResolveView(APIView):
    """An operator's decision, applied at once and recorded with who made it (owners and operators)."""

    write_role = Role.OPERATOR

    class Input(serializers.Serializer):
        decision = serializers.ChoiceField(choices=DECISIONS)
        existing_dimension = serializers.CharField(required=False, help_text="decompose")
        new_dimension = serializers.CharField(required=False, help_text="decompose")
        dimension = serializers.CharField(required=False, help_text="misclassification")
        reasoning = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=Input, responses=ConflictOutput,
                   summary="Resolve a pending conflict: decompose, update, dismiss or misclassification")
    def post(self, request, conflict_id: int):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        conflict = selectors.conflict_get(workspace=request.workspace, conflict_id=conflict_id)
        conflict_apply(conflict_id=conflict.pk, decision=data.validated_data, actor=request_actor(request))
        return Response(ConflictOutput(selectors.conflict_get(workspace=request.workspace,
                                                              conflict_id=conflict_id)).data)


class ConflictDismissView(APIView):
    write_role = Role.OPERATOR

    class Input(serializers.Serializer):
        reason = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=Input, responses=ConflictOutput, summary="Dismiss a pending conflict: the world stands")
    def post(self, request, conflict_id: int):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        conflict = selectors.conflict_get(workspace=request.workspace, conflict_id=conflict_id)
        conflict_dismiss(conflict_id=conflict.pk, actor=request_actor(request), reason=data.validated_data["reason"])
        return Response(ConflictOutput(selectors.conflict_get(workspace=request.workspace,
                                                              conflict_id=conflict_id)).data)


class ResolutionRunView(APIView):
    write_role = Role.OPERATOR

    @extend_schema(request=None, responses={202: RunOutput}, summary="Run the resolution job now")
    def post(self, request):
        run = resolution_request(workspace=request.workspace, trigger=request_actor(request))
        return Response(RunOutput(run).data, status=status.HTTP_202_ACCEPTED)


class ResolutionRunDetailView(APIView):
    @extend_schema(responses=RunOutput, summary="One run of the resolution job")
    def get(self, request, run_id: int):
        return Response(RunOutput(selectors.run_get(workspace=request.workspace, run_id=run_id)).data)
