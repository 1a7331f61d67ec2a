"""The model registry over REST, for the caller's workspace: its models (and the deployment's shared with
it, read-only and without their key), registering, changing, testing and deleting its own, and which
model answers each role. The same services as admin and the CLI (fathom.llm.services); owners only
write, and a key is write-only: only its last four characters are ever shown."""

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.auth import request_actor
from fathom.errors import ApplicationError, NotFoundError
from fathom.llm import services
from fathom.llm.models import ANY_ROLE, LLMModel, OpenAIApi, Provider, role_validator
from fathom.llm.registry import models_usable_by
from fathom.llm.trial import model_try
from fathom.models import Role
from fathom.selectors import model_assignments_of

# The providers a workspace registers (offline always exists; scripted is the tests').
TENANT_PROVIDERS = [p.value for p in Provider if p not in (Provider.OFFLINE, Provider.SCRIPTED)]


class ModelOutput(serializers.ModelSerializer):
    api_key_hint = serializers.SerializerMethodField(help_text="the key's last four characters ('' when none, "
                                                               "and always for a shared model)")
    shared = serializers.SerializerMethodField(help_text="a deployment-wide model shared with this workspace "
                                                         "(read-only here)")

    class Meta:
        model = LLMModel
        fields = ["name", "provider", "model", "base_url", "api", "api_key_hint", "shared", "input_price_per_mtok",
                  "output_price_per_mtok", "cached_input_price_per_mtok", "context_window", "max_output_tokens",
                  "timeout_seconds", "options", "created_at", "updated_at"]

    def get_api_key_hint(self, row) -> str:
        return "" if row.workspace_id is None else row.api_key_hint

    def get_shared(self, row) -> bool:
        return row.workspace_id is None


class ModelInput(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    provider = serializers.ChoiceField(choices=TENANT_PROVIDERS)
    model = serializers.CharField(max_length=200)
    base_url = serializers.URLField(max_length=500, required=False, allow_blank=True, default="",
                                    help_text="blank: the provider's endpoint; else one the deployment allows "
                                              "(FATHOM_MODEL_BASE_URLS, FATHOM_MODEL_ALLOW_LOOPBACK)")
    api = serializers.ChoiceField(choices=OpenAIApi.choices, required=False, default=OpenAIApi.CHAT_COMPLETIONS)
    api_key = serializers.CharField(max_length=500, required=False, allow_blank=True, default="", write_only=True,
                                    help_text="write-only, stored encrypted; blank: no key")
    input_price_per_mtok = serializers.DecimalField(max_digits=12, decimal_places=6, min_value=0, required=False)
    output_price_per_mtok = serializers.DecimalField(max_digits=12, decimal_places=6, min_value=0, required=False)
    cached_input_price_per_mtok = serializers.DecimalField(max_digits=12, decimal_places=6, min_value=0,
                                                           required=False, allow_null=True)
    context_window = serializers.IntegerField(min_value=1, max_value=100_000_000, required=False)
    max_output_tokens = serializers.IntegerField(min_value=1, max_value=10_000_000, required=False)
    timeout_seconds = serializers.FloatField(min_value=0.1, max_value=3600, required=False)
    options = serializers.DictField(required=False, help_text='default call options, e.g. {"temperature": 0.2}')


class ModelUpdateInput(ModelInput):
    """Every field optional; `api_key` replaces the key ("" removes it), absent keeps it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False
            if hasattr(field, "default"):
                field.default = serializers.empty


class ModelListCreateView(APIView):
    write_role = Role.OWNER

    @extend_schema(responses=ModelOutput(many=True), summary="The workspace's models and those shared with it")
    def get(self, request):
        rows = models_usable_by(workspace=request.workspace).order_by("name", "workspace_id")
        return Response(ModelOutput(rows, many=True).data)

    @extend_schema(request=ModelInput, responses={201: ModelOutput}, summary="Register a model (owners)")
    def post(self, request):
        data = ModelInput(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.model_create(workspace=request.workspace, actor=request_actor(request), **data.validated_data)
        return Response(ModelOutput(row).data, status=status.HTTP_201_CREATED)


class ModelDetailView(APIView):
    write_role = Role.OWNER

    @extend_schema(responses=ModelOutput, summary="One model the workspace may use")
    def get(self, request, name: str):
        return Response(ModelOutput(services.model_get(workspace=request.workspace, name=name)).data)

    @extend_schema(request=ModelUpdateInput, responses=ModelOutput, summary="Change a model of the workspace (owners)")
    def patch(self, request, name: str):
        row = _own(request, name)
        data = ModelUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.model_update(model=row, actor=request_actor(request), **data.validated_data)
        return Response(ModelOutput(row).data)

    @extend_schema(request=None, responses={204: None}, summary="Delete a model of the workspace and its role "
                                                                "assignments (owners)")
    def delete(self, request, name: str):
        services.model_delete(model=_own(request, name), actor=request_actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ModelTestView(APIView):
    write_role = Role.OWNER

    class Input(serializers.Serializer):
        prompt = serializers.CharField(max_length=4000, required=False, default="Say hello in five words.")

    @extend_schema(request=Input, responses=inline_serializer("ModelTestOut", {
        "ok": serializers.BooleanField(), "reply": serializers.CharField(), "error": serializers.CharField(),
        "trace_id": serializers.CharField(), "trace": serializers.DictField(help_text="as GET /v1/traces/{id}")}),
        summary="Call a model once (owners): its reply, or its error, and the call's trace")
    def post(self, request, name: str):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.model_get(workspace=request.workspace, name=name)
        return Response(model_try(workspace=request.workspace, model=row, prompt=data.validated_data["prompt"],
                                  actor_id=request.user.actor_id))


class AssignmentOutput(serializers.Serializer):
    role = serializers.CharField()
    model = serializers.CharField(source="model.name")


class RoleListView(APIView):
    @extend_schema(responses=AssignmentOutput(many=True), summary="Which model answers each role here "
                                                                  "(roles not listed: the deployment's default)")
    def get(self, request):
        return Response(AssignmentOutput(model_assignments_of(workspace=request.workspace), many=True).data)


class RoleDetailView(APIView):
    write_role = Role.OWNER

    class Input(serializers.Serializer):
        model = serializers.SlugField(max_length=100, help_text="a model the workspace may use")

    @extend_schema(request=Input, responses=AssignmentOutput, summary=f"Make a model answer a role ('{ANY_ROLE}': "
                                                                      "every role not named) (owners)")
    def put(self, request, role: str):
        _role_checked(role)
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.model_get(workspace=request.workspace, name=data.validated_data["model"])
        assignment = services.model_assign(workspace=request.workspace, role=role, model=row,
                                           actor=request_actor(request))
        return Response(AssignmentOutput(assignment).data)

    @extend_schema(request=None, responses={204: None}, summary="Unassign a role (owners)")
    def delete(self, request, role: str):
        _role_checked(role)
        if not model_assignments_of(workspace=request.workspace).filter(role=role).exists():
            raise NotFoundError(f"no model is assigned the role {role!r} here")
        services.model_unassign(workspace=request.workspace, role=role, actor=request_actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


def _role_checked(role: str) -> None:
    try:
        role_validator(role)
    except DjangoValidationError:
        raise ApplicationError(f"{role!r} is no role: a lowercase word, or {ANY_ROLE} for every role",
                               details={"role": "invalid"}) from None


def _own(request, name: str) -> LLMModel:
    """A model of the caller's workspace; a shared one is read-only (404 to changes, as any other name)."""
    row = services.model_get(workspace=request.workspace, name=name)
    if row.workspace_id != request.workspace.pk:
        raise NotFoundError(f"no LLM model of this workspace named {name!r} (a shared model is read-only)")
    return row
