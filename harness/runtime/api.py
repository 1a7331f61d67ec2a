"""REST for sessions, their messages and events, and profiles."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.api.params import idempotency_key_clean
from fathom.api.schema import Error
from harness.runtime import profiles, selectors, services
from harness.runtime.events import channel_for
from harness.runtime.models import AgentProfile, Session, Trigger, UserProfile
from harness.runtime.sse import (
    EVENT_STREAM_PARAMETERS,
    EventStreamRenderer,
    event_payload,
    numbered_events_answer,
)

# --- sessions ---------------------------------------------------------------------------------------------

class SessionOutput(serializers.ModelSerializer):
    class Meta:
        model = Session
        fields = ["id", "tag", "title", "status", "agent_profile_copy", "user_profile_copy", "profiles_copied_at",
                  "turn_count", "last_event_seq", "created_at", "updated_at"]


class TriggerOutput(serializers.ModelSerializer):
    class Meta:
        model = Trigger
        fields = ["id", "kind", "state", "content", "payload", "source", "author", "turn", "addressed",
                  "addressed_note", "addressed_at", "refires", "given_up_at", "created_at"]


class SessionListCreateView(generics.ListAPIView):
    serializer_class = SessionOutput

    class Input(serializers.Serializer):
        agent = serializers.SlugField(required=False, default="", allow_blank=True,
                                      help_text="agent profile slug (the workspace default when omitted)")
        user = serializers.SlugField(required=False, default="", allow_blank=True, help_text="user profile slug")
        tag = serializers.CharField(required=False, default="", allow_blank=True, max_length=100,
                                    help_text="the river: every delta of this conversation carries it")
        title = serializers.CharField(required=False, default="", allow_blank=True, max_length=200)

    def get_queryset(self):
        return selectors.sessions_list(workspace=self.request.workspace)

    @extend_schema(request=Input, responses={201: SessionOutput}, summary="Open a session")
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.session_create(workspace=request.workspace, **data.validated_data)
        return Response(SessionOutput(session).data, status=status.HTTP_201_CREATED)


class SessionDetailView(APIView):
    @extend_schema(responses=SessionOutput, summary="A session")
    def get(self, request, session_id):
        return Response(SessionOutput(selectors.session_get(workspace=request.workspace, session_id=session_id)).data)


class SessionMessagesView(generics.ListAPIView):
    serializer_class = TriggerOutput

    class Input(serializers.Serializer):
        content = serializers.CharField(max_length=100_000)
        author = serializers.CharField(required=False, default="", allow_blank=True, max_length=64)
        iterations = serializers.IntegerField(
            required=False, min_value=1, max_value=5,
            help_text="deep-synthesis iteration: the quality harness makes this many attempts and keeps the best")

    def get_queryset(self):
        session = selectors.session_get(workspace=self.request.workspace, session_id=self.kwargs["session_id"])
        return selectors.session_messages(session=session)

    @extend_schema(
        request=Input, responses={202: TriggerOutput, 200: TriggerOutput, 422: Error},
        summary="Send a user message (a turn answers it on a worker)",
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
                                     description="a retry with the same key and body sends the message once "
                                                 "(200, Idempotent-Replayed); a different body is a 422")],
    )
    def post(self, request, session_id):
        session = selectors.session_get(workspace=request.workspace, session_id=session_id)
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        iterations = fields.pop("iterations", None)
        key = idempotency_key_clean(request.headers.get("Idempotency-Key", ""))
        written = services.message_write(session=session, idempotency_key=key,
                                         payload={"iterations": iterations} if iterations else None, **fields)
        body = {"trigger_id": str(written.trigger.pk), **TriggerOutput(written.trigger).data}
        if written.replayed:
            return Response(body, status=status.HTTP_200_OK, headers={"Idempotent-Replayed": "true"})
        return Response(body, status=status.HTTP_202_ACCEPTED)


class SessionRefreshProfileView(APIView):
    @extend_schema(request=None, responses={202: TriggerOutput},
                   summary="Queue a RefreshProfile trigger: the next turn copies the profiles afresh")
    def post(self, request, session_id):
        session = selectors.session_get(workspace=request.workspace, session_id=session_id)
        trigger = services.trigger_enqueue(session=session, kind=Trigger.Kind.REFRESH_PROFILE)
        return Response({"trigger_id": str(trigger.pk), **TriggerOutput(trigger).data},
                        status=status.HTTP_202_ACCEPTED)


class SessionEventOutput(serializers.Serializer):
    seq = serializers.IntegerField()
    kind = serializers.CharField()
    turn_id = serializers.CharField(allow_null=True)
    data = serializers.DictField(child=serializers.JSONField())
    created_at = serializers.DateTimeField()


class SessionEventsOutput(serializers.Serializer):
    events = SessionEventOutput(many=True)
    last_seq = serializers.IntegerField()
    next = serializers.CharField(help_text="the query that polls for what comes next")


class SessionEventsView(APIView):
    """The session's events: Server-Sent Events with `Accept: text/event-stream` (resumable with
    Last-Event-ID), otherwise a JSON page for polling (`?after=<seq>`)."""

    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        parameters=EVENT_STREAM_PARAMETERS,
        responses={(200, "application/json"): SessionEventsOutput, (200, "text/event-stream"): str},
        summary="Session events (SSE or JSON polling)",
    )
    def get(self, request, session_id):
        session = selectors.session_get(workspace=request.workspace, session_id=session_id)

        def read_after(*, after: int, limit: int):
            return selectors.session_events_after(session_id=session.pk, after=after, limit=limit)

        return numbered_events_answer(request, channel=channel_for(session.pk), read_after=read_after,
                                      payload=event_payload)


# --- profiles ---------------------------------------------------------------------------------------------

class AgentProfileOutput(serializers.ModelSerializer):
    class Meta:
        model = AgentProfile
        fields = ["slug", "name", "agents_md", "soul_md", "identity_md", "memory", "version", "created_at",
                  "updated_at"]
        # The built-in default agent is listed before anything stores it: no timestamps yet.
        extra_kwargs = {"created_at": {"allow_null": True}, "updated_at": {"allow_null": True}}


class UserProfileOutput(serializers.ModelSerializer):
    class Meta:
        model = UserProfile
        fields = ["slug", "name", "user_md", "memory", "preferences", "version", "created_at", "updated_at"]


class AgentProfileInput(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    agents_md = serializers.CharField(required=False, allow_blank=True)
    soul_md = serializers.CharField(required=False, allow_blank=True)
    identity_md = serializers.CharField(required=False, allow_blank=True)
    memory = serializers.CharField(required=False, allow_blank=True)


class UserProfileInput(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    user_md = serializers.CharField(required=False, allow_blank=True)
    memory = serializers.CharField(required=False, allow_blank=True)
    preferences = serializers.DictField(required=False)


class AgentProfileCreateInput(AgentProfileInput):
    slug = serializers.SlugField(max_length=64)


class UserProfileCreateInput(UserProfileInput):
    slug = serializers.SlugField(max_length=64)


class _ProfileListCreate(generics.ListAPIView):
    model = None
    input_class = None
    create = None

    def get_queryset(self):
        return selectors.profiles_list(workspace=self.request.workspace, model=self.model)

    def post(self, request):
        data = self.input_class(data=request.data)
        data.is_valid(raise_exception=True)
        profile = type(self).create(workspace=request.workspace, **data.validated_data)
        return Response(self.serializer_class(profile).data, status=status.HTTP_201_CREATED)


class _ProfileDetail(APIView):
    output_class = None
    input_class = None
    show_profile = None
    get_profile = None

    def get(self, request, slug):
        return Response(self.output_class(type(self).show_profile(workspace=request.workspace, slug=slug)).data)

    def patch(self, request, slug):
        profile = type(self).get_profile(workspace=request.workspace, slug=slug)
        data = self.input_class(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        profile = profiles.profile_update(profile=profile, **data.validated_data)
        return Response(self.output_class(profile).data)


@extend_schema_view(
    get=extend_schema(summary="Agent profiles (AGENTS.md, SOUL.md, IDENTITY.md, memory)"),
    post=extend_schema(request=AgentProfileCreateInput, responses={201: AgentProfileOutput},
                       summary="Create an agent profile"))
class AgentProfileListCreateView(_ProfileListCreate):
    serializer_class = AgentProfileOutput
    model = AgentProfile
    input_class = AgentProfileCreateInput
    create = staticmethod(profiles.agent_profile_create)

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        if page is not None and not self.request.query_params.get("cursor"):
            page = selectors.agent_profiles_with_default(workspace=self.request.workspace, profiles=page)
        return page


@extend_schema_view(
    get=extend_schema(summary="User profiles (USER.md, memory, preferences)"),
    post=extend_schema(request=UserProfileCreateInput, responses={201: UserProfileOutput},
                       summary="Create a user profile"))
class UserProfileListCreateView(_ProfileListCreate):
    serializer_class = UserProfileOutput
    model = UserProfile
    input_class = UserProfileCreateInput
    create = staticmethod(profiles.user_profile_create)


@extend_schema(request=AgentProfileInput, responses=AgentProfileOutput,
               summary="An agent profile; a change reaches sessions on RefreshProfile")
class AgentProfileDetailView(_ProfileDetail):
    output_class = AgentProfileOutput
    input_class = AgentProfileInput
    show_profile = staticmethod(selectors.agent_profile_show)
    get_profile = staticmethod(profiles.agent_profile_get)  # an edit of the default one stores it


@extend_schema(request=UserProfileInput, responses=UserProfileOutput,
               summary="A user profile; a change reaches sessions on RefreshProfile")
class UserProfileDetailView(_ProfileDetail):
    output_class = UserProfileOutput
    input_class = UserProfileInput
    show_profile = staticmethod(profiles.user_profile_get)
    get_profile = staticmethod(profiles.user_profile_get)
