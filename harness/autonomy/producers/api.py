"""REST for the producers: start a run, read it."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.errors import NotFoundError
from harness.autonomy.models import ProducerRun
from harness.autonomy.producers import services


class ProducerRunOutput(serializers.ModelSerializer):
    class Meta:
        model = ProducerRun
        fields = ["id", "producer", "mode", "hours", "origin", "status", "proposals", "model_calls", "read", "error",
                  "created_at", "started_at", "finished_at"]


class ProducerRunView(APIView):
    """Start a producer (reflective, topical) now: its proposals go through the gate."""

    class Input(serializers.Serializer):
        mode = serializers.ChoiceField(choices=["window", "l2"], required=False,
                                       help_text="topical only: window (episodes, the default) or l2 (topics)")
        hours = serializers.IntegerField(required=False, default=24, min_value=1, max_value=2160,
                                         help_text="how far back it reads")

    @extend_schema(request=Input, responses={202: ProducerRunOutput}, summary="Run a producer now")
    def post(self, request, name):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        run = services.producer_run_request(workspace=request.workspace, producer=name, origin="api",
                                            mode=data.validated_data.get("mode", ""),
                                            hours=data.validated_data["hours"])
        return Response(ProducerRunOutput(run).data, status=status.HTTP_202_ACCEPTED)


class ProducerRunDetailView(APIView):
    @extend_schema(responses=ProducerRunOutput, summary="A producer run and its proposals")
    def get(self, request, run_id):
        run = ProducerRun.objects.filter(workspace=request.workspace, pk=_int_or_none(run_id)).first()
        if run is None:
            raise NotFoundError(f"no producer run {run_id} in this workspace")
        return Response(ProducerRunOutput(run).data)


def _int_or_none(value):
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 < number < 2**63 else None
