"""REST for recollections: what would be injected for a text, and the operator's cache reload."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from festinger import cache
from festinger.recollection import recollection_for

MAX_TEXT = 200_000


class SalientOut(serializers.Serializer):
    token = serializers.CharField()
    saliency = serializers.FloatField()


class RecollectionOut(serializers.Serializer):
    active = serializers.BooleanField(help_text="false while the workspace's world is not bootstrapped")
    block = serializers.CharField(help_text="the <recollection> block; empty when there is nothing to say")
    recalled = serializers.ListField(child=serializers.CharField())
    unknown = serializers.ListField(child=serializers.CharField(), help_text="salient concepts with no edge")
    salient = SalientOut(many=True)


class RecollectionView(APIView):
    """`GET ?text=...`: the recollection a model call with this text would get now. A preview:
    nothing is counted and nothing is learned."""

    class Params(serializers.Serializer):
        text = serializers.CharField(max_length=MAX_TEXT, trim_whitespace=False)

    @extend_schema(parameters=[OpenApiParameter("text", str, required=True)], responses=RecollectionOut)
    def get(self, request):
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        return Response(recollection_preview(workspace_id=request.workspace.pk, text=params.validated_data["text"]))


def recollection_preview(*, workspace_id: int, text: str) -> dict:
    """The recollection a model call with this text would get now (RecollectionOut); nothing is
    counted, nothing learned."""
    recollection = recollection_for(workspace_id=workspace_id, text=text, learn=False)
    return RecollectionOut({"active": cache.world(workspace_id) is not None, **recollection.as_dict()}).data


class ReloadOut(serializers.Serializer):
    active = serializers.BooleanField()
    concepts = serializers.IntegerField()
    edges = serializers.IntegerField()
    pending_conflicts = serializers.IntegerField()


class ReloadView(APIView):
    """`POST`: reload the workspace's world model from the database, here now and in every other
    process before its next read (operators and owners)."""

    @extend_schema(request=None, responses=ReloadOut)
    def post(self, request):
        world = cache.world_reload(request.workspace.pk)
        body = {"active": world is not None, "concepts": len(world.soas_by_token) if world else 0,
                "edges": sum(len(edges) for edges in world.urd_by_concept.values()) if world else 0,
                "pending_conflicts": len(world.pending_conflicts) if world else 0}
        return Response(ReloadOut(body).data)
