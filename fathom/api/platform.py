"""The platform's endpoints: health, the caller's workspace, its API keys."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.errors import NotFoundError
from fathom.health import health_report
from fathom.models import ApiKey, Role
from fathom.services import apikey_create, apikey_revoke


class ComponentHealth(serializers.Serializer):
    ok = serializers.BooleanField()
    error = serializers.CharField(required=False, help_text="why the component is not ok, when it failed to answer")


class HealthOutput(serializers.Serializer):
    ok = serializers.BooleanField(help_text="every component is ok")
    database = ComponentHealth(help_text="also: engine, server_version, pgvector_version, embedded")
    redis = ComponentHealth(help_text="also: version, embedded")
    workers = ComponentHealth(help_text="also: workers, queues_without_worker, ping_ms")
    beat = ComponentHealth(help_text="also: last_tick, age_seconds")


class HealthView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: HealthOutput, 503: HealthOutput}, summary="Health of every component (no auth)")
    def get(self, request):
        report = health_report()
        return Response(report, status=status.HTTP_200_OK if report["ok"] else status.HTTP_503_SERVICE_UNAVAILABLE)


class WorkspaceView(APIView):
    @extend_schema(
        responses=inline_serializer("WorkspaceOut", {"slug": serializers.CharField(), "name": serializers.CharField(),
                                                     "role": serializers.CharField()}),
        summary="The caller's workspace and role",
    )
    def get(self, request):
        workspace = request.workspace
        return Response({"slug": workspace.slug, "name": workspace.name, "role": request.user.role})


class ApiKeyOutput(serializers.ModelSerializer):
    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "role", "created_at", "last_used_at", "revoked_at"]


class ApiKeyIssuedOutput(ApiKeyOutput):
    secret = serializers.CharField(help_text="the key itself: send it as 'Authorization: Bearer <secret>'")

    class Meta(ApiKeyOutput.Meta):
        fields = [*ApiKeyOutput.Meta.fields, "secret"]


class ApiKeyListCreateView(generics.ListAPIView):
    """Keys of the caller's workspace. Only owners list, issue and revoke keys."""

    serializer_class = ApiKeyOutput
    read_role = Role.OWNER
    write_role = Role.OWNER

    class Input(serializers.Serializer):
        name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        role = serializers.ChoiceField(choices=Role.choices)

    def get_queryset(self):
        return ApiKey.objects.filter(workspace=self.request.workspace)

    @extend_schema(request=Input, responses={201: ApiKeyIssuedOutput}, summary="Issue a key (its secret is shown once)")
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        issued = apikey_create(workspace=request.workspace, **data.validated_data)
        return Response({**ApiKeyOutput(issued.key).data, "secret": issued.secret}, status=status.HTTP_201_CREATED)


class ApiKeyRevokeView(APIView):
    write_role = Role.OWNER

    @extend_schema(request=None, responses={200: ApiKeyOutput}, summary="Revoke a key")
    def post(self, request, key_id: int):
        key = ApiKey.objects.filter(workspace=request.workspace, pk=key_id).first()
        if key is None:
            raise NotFoundError(f"no API key {key_id} in this workspace")
        return Response(ApiKeyOutput(apikey_revoke(key=key)).data)
