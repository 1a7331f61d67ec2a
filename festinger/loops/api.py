"""REST for the loop detector's record: GET /v1/festinger/loops."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers

from festinger.loops.models import LoopEvent
from festinger.loops.selectors import loop_events_list


class LoopEventOutput(serializers.ModelSerializer):
    class Meta:
        model = LoopEvent
        fields = ["id", "session", "kind", "level", "model", "detail", "trace_id", "created_at"]


class LoopEventListView(generics.ListAPIView):
    """Every loop the detector saw and every mitigation it applied, newest first."""

    serializer_class = LoopEventOutput

    class Filters(serializers.Serializer):
        session = serializers.CharField(required=False, max_length=128, help_text="one conversation")
        kind = serializers.ChoiceField(choices=LoopEvent.Kind.choices, required=False)
        since = serializers.DateTimeField(required=False, help_text="created at or after")

    @extend_schema(parameters=[Filters], summary="List loop detections and mitigations (filter by session, kind, since)")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        filters = self.Filters(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return loop_events_list(workspace=self.request.workspace, **filters.validated_data)
