"""REST for background tasks (list a session's, read one, cancel one) and profile history (the
values managed-file writes and profile edits replaced)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.auth import request_actor
from fathom.errors import ApplicationError
from harness.runtime import background, profiles, selectors
from harness.runtime.models import ProfileFieldVersion, Task

PROFILE_FIELDS = {"agent": ("agents_md", "soul_md", "identity_md", "memory"),
                  "user": ("user_md", "memory", "preferences")}


class TaskOutput(serializers.ModelSerializer):
    class Meta:
        model = Task
        fields = ["id", "session", "fire", "call_id", "tool", "arguments", "state", "result", "error", "attempts",
                  "max_attempts", "timeout_seconds", "cancel_requested_by", "created_at", "started_at", "picked_at",
                  "finished_at"]


class SessionTasksView(generics.ListAPIView):
    serializer_class = TaskOutput

    @extend_schema(summary="A session's background tasks, newest first",
                   parameters=[OpenApiParameter("state", str, enum=Task.State.values,
                                                description="only tasks in this state")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        session = selectors.session_get(workspace=self.request.workspace, session_id=self.kwargs["session_id"])
        state = self.request.query_params.get("state", "")
        if state and state not in Task.State.values:
            raise ApplicationError(f"state must be one of {', '.join(Task.State.values)}")
        return selectors.session_tasks(session=session, state=state)


class TaskDetailView(APIView):
    @extend_schema(responses=TaskOutput, summary="A background task")
    def get(self, request, task_id):
        return Response(TaskOutput(selectors.task_get(workspace=request.workspace, task_id=task_id)).data)


class TaskCancelView(APIView):
    @extend_schema(request=None, responses=TaskOutput,
                   summary="Cancel a background task (Pending or Running: Canceled at once; an ended one is "
                           "returned as it is)")
    def post(self, request, task_id):
        task = selectors.task_get(workspace=request.workspace, task_id=task_id)
        return Response(TaskOutput(background.task_cancel(task=task, by=request_actor(request))).data)


class ProfileFieldVersionOutput(serializers.ModelSerializer):
    class Meta:
        model = ProfileFieldVersion
        fields = ["id", "field", "version", "content", "replaced_by", "created_at"]


class _ProfileHistoryView(generics.ListAPIView):
    serializer_class = ProfileFieldVersionOutput
    kind = ""

    def get_queryset(self):
        field = self.request.query_params.get("field", "")
        if field and field not in PROFILE_FIELDS[self.kind]:
            raise ApplicationError(f"field must be one of {', '.join(PROFILE_FIELDS[self.kind])}")
        getter = selectors.agent_profile_show if self.kind == "agent" else profiles.user_profile_get
        profile = getter(workspace=self.request.workspace, slug=self.kwargs["slug"])
        return selectors.profile_history(profile=profile, field=field)


@extend_schema(summary="An agent profile's history: each value a write replaced, newest first",
               parameters=[OpenApiParameter("field", str, enum=PROFILE_FIELDS["agent"])])
class AgentProfileHistoryView(_ProfileHistoryView):
    kind = "agent"


@extend_schema(summary="A user profile's history: each value a write replaced, newest first",
               parameters=[OpenApiParameter("field", str, enum=PROFILE_FIELDS["user"])])
class UserProfileHistoryView(_ProfileHistoryView):
    kind = "user"
