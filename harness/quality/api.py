"""REST of the quality harness: a fire's quality record (part of GET /v1/fires/{id}) and feedback."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.auth import request_actor
from harness.fires import selectors as fire_selectors
from harness.quality import services
from harness.quality.models import Feedback, QualityAttempt, QualityRun


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
