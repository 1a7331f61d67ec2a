"""REST of the quality harness: a fire's quality record (part of GET /v1/fires/{id}), feedback, the
workspace's quality settings and retry policy (seed 001's "Tuning"), and the calibration the verifier
carries."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.auth import request_actor
from fathom.models import Role
from harness.fires import selectors as fire_selectors
from harness.quality import services
from harness.quality.configuration import quality_settings_get, quality_settings_summary
from harness.quality.models import WORKFLOWS, Feedback, QualityAttempt, QualityRun


class QualityAttemptOutput(serializers.ModelSerializer):
    class Meta:
        model = QualityAttempt
        fields = ["number", "healing_prompt", "response", "stream_alerts", "contract", "verifier", "perspectives",
                  "combined", "decision", "created_at"]


class QualityOutput(serializers.ModelSerializer):
    """The quality harness's record of a fire (seed 001): complexity, plan, swarm, attempts with their
    contract and verifier, scores, degraded, the workspace profile, context metrics and every event."""

    attempts = QualityAttemptOutput(many=True, read_only=True)

    class Meta:
        model = QualityRun
        fields = ["state", "end_reason", "complexity", "plan", "sources", "swarm", "attempt", "iterations",
                  "waiting_for", "scores", "degraded", "profile", "context_metrics", "final_attempt", "verifier_score",
                  "events", "attempts", "created_at", "finished_at"]


class FeedbackOutput(serializers.ModelSerializer):
    class Meta:
        model = Feedback
        fields = ["id", "fire", "rating", "comment", "verifier_score", "author", "created_at"]


class FireFeedbackView(APIView):
    class Input(serializers.Serializer):
        rating = serializers.ChoiceField(choices=Feedback.Rating.choices, help_text="thumbs up or down")
        comment = serializers.CharField(required=False, default="", allow_blank=True, max_length=4000)

    @extend_schema(request=Input, responses={201: FeedbackOutput},
                   summary="Thumbs up or down on a fire's answer (calibrates the verifier)")
    def post(self, request, fire_id):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        fire = fire_selectors.fire_get(workspace=request.workspace, fire_id=fire_id)
        feedback = services.feedback_create(fire=fire, author=request_actor(request), **data.validated_data)
        return Response(FeedbackOutput(feedback).data, status=status.HTTP_201_CREATED)


class FeedbackListView(generics.ListAPIView):
    """The workspace's feedback, newest first (what calibrates its verifier)."""

    serializer_class = FeedbackOutput

    def get_queryset(self):
        return Feedback.objects.filter(workspace=self.request.workspace)


class RetryPolicyFields(serializers.Serializer):
    max_attempts = serializers.IntegerField(min_value=1, max_value=10, required=False)
    good_enough_score = serializers.FloatField(min_value=0, max_value=1, required=False,
                                               help_text="combined score above which no retry fires")
    low_quality_threshold = serializers.FloatField(min_value=0, max_value=1, required=False,
                                                   help_text="verifier score below which a quality retry fires")


class ContractFields(serializers.Serializer):
    min_output_chars = serializers.IntegerField(required=False)
    min_insights = serializers.IntegerField(required=False)
    min_recommendations = serializers.IntegerField(required=False)
    min_documents = serializers.IntegerField(required=False)
    require_citations = serializers.BooleanField(required=False)


class QualitySettingsOutput(serializers.Serializer):
    enabled = serializers.BooleanField()
    swarm_enabled = serializers.BooleanField()
    swarm_min_sources = serializers.IntegerField()
    swarm_specialists = serializers.ListField(child=serializers.CharField(),
                                              help_text="the specialists' angles (empty: the five defaults)")
    specialists = serializers.ListField(child=serializers.CharField(), help_text="the angles the swarm runs")
    retry_policies = serializers.DictField(child=RetryPolicyFields(), help_text="per workflow")
    contracts = serializers.DictField(child=ContractFields(), help_text="per workflow: the thresholds that replace "
                                                                        "the seed's contract")


class QualitySettingsView(APIView):
    """The workspace's quality harness settings: on/off, the swarm and its specialists, and the retry
    and contract thresholds per workflow. Operators change them; the next fire uses them."""

    class Input(serializers.Serializer):
        enabled = serializers.BooleanField(required=False)
        swarm_enabled = serializers.BooleanField(required=False)
        swarm_min_sources = serializers.IntegerField(min_value=1, max_value=1000, required=False)
        swarm_specialists = serializers.ListField(child=serializers.CharField(max_length=200), max_length=10,
                                                  required=False)
        retry_policies = serializers.DictField(child=RetryPolicyFields(), required=False,
                                               help_text=f"by workflow: {', '.join(WORKFLOWS)}")
        # checked by the service (harness.quality.models.contracts_problems), as admin checks them
        contracts = serializers.DictField(child=serializers.DictField(child=serializers.JSONField(allow_null=True)),
                                          required=False,
                                          help_text=f"by workflow ({', '.join(WORKFLOWS)}): thresholds replacing "
                                                    f"the seed's contract; null removes one, {{}} all")

    @extend_schema(responses=QualitySettingsOutput, summary="The workspace's quality settings")
    def get(self, request):
        return Response(quality_settings_summary(quality_settings_get(workspace_id=request.workspace.pk)))

    @extend_schema(request=Input, responses=QualitySettingsOutput, summary="Change the workspace's quality settings")
    def patch(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.quality_settings_update(workspace_id=request.workspace.pk, **data.validated_data)
        return Response(quality_settings_summary(row))


class CalibrationView(APIView):
    write_role = Role.OPERATOR

    class Output(serializers.Serializer):
        calibration = serializers.CharField(help_text="the examples the verifier's system prompt carries ('' none)")
        built_at = serializers.DateTimeField(allow_null=True)
        feedback = serializers.IntegerField(help_text="feedback rows of the workspace")

    @extend_schema(responses=Output, summary="The calibration the verifier uses (rebuilt from feedback every 5 "
                                             "minutes)")
    def get(self, request):
        row = quality_settings_get(workspace_id=request.workspace.pk)
        return Response(_calibration_out(row, request.workspace))

    @extend_schema(request=None, responses=Output, summary="Rebuild the calibration from feedback now (operators)")
    def post(self, request):
        services.calibration_rebuild(workspace_id=request.workspace.pk)
        row = quality_settings_get(workspace_id=request.workspace.pk)
        return Response(_calibration_out(row, request.workspace))


def _calibration_out(row, workspace) -> dict:
    return {"calibration": row.calibration, "built_at": row.calibration_built_at,
            "feedback": Feedback.objects.filter(workspace=workspace).count()}
