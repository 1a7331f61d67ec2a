"""REST for a session's heartbeat and cron schedules (harness.runtime.schedules)."""

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from harness.runtime import schedules, selectors
from harness.runtime.models import SessionSchedule


class ScheduleOutput(serializers.ModelSerializer):
    session = serializers.UUIDField(source="session_id", read_only=True)
    enabled = serializers.SerializerMethodField(help_text="whether beat runs it (switchable in admin)")

    class Meta:
        model = SessionSchedule
        fields = ["id", "session", "kind", "every_seconds", "cron", "timezone", "content", "enabled", "last_fired_at",
                  "created_at"]

    def get_enabled(self, schedule) -> bool:
        return bool(schedule.periodic_task_id) and schedule.periodic_task.enabled


class ScheduleInput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SessionSchedule.Kind.values)
    every_seconds = serializers.IntegerField(
        required=False, min_value=schedules.MIN_EVERY_SECONDS, max_value=schedules.MAX_EVERY_SECONDS,
        help_text=f"heartbeat: the interval in seconds, at least {schedules.MIN_EVERY_SECONDS}")
    cron = serializers.CharField(required=False, default="", allow_blank=True, max_length=120,
                                 help_text="cron: five fields (minute hour day-of-month month day-of-week) or an "
                                           "@alias such as @hourly")
    timezone = serializers.CharField(required=False, default="UTC", max_length=64,
                                     help_text="cron: the IANA time zone its fields are read in")
    content = serializers.CharField(required=False, default="", allow_blank=True, max_length=10_000,
                                    help_text="what each trigger says to the agent")


@extend_schema_view(
    get=extend_schema(summary="A session's heartbeat and cron schedules"),
    post=extend_schema(request=ScheduleInput, responses={201: ScheduleOutput},
                       summary="Add a heartbeat ({kind: heartbeat, every_seconds}) or a cron schedule "
                               "({kind: cron, cron}) to a session"))
class SessionSchedulesView(generics.ListAPIView):
    serializer_class = ScheduleOutput

    def get_queryset(self):
        session = selectors.session_get(workspace=self.request.workspace, session_id=self.kwargs["session_id"])
        return selectors.session_schedules_list(session=session)

    def post(self, request, session_id):
        session = selectors.session_get(workspace=request.workspace, session_id=session_id)
        data = ScheduleInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        schedule = schedules.session_schedule_create(
            session=session, kind=values["kind"], every_seconds=values.get("every_seconds"), cron=values["cron"],
            timezone_name=values["timezone"], content=values["content"])
        return Response(ScheduleOutput(schedule).data, status=status.HTTP_201_CREATED)


class ScheduleDetailView(APIView):
    @extend_schema(responses=ScheduleOutput, summary="A schedule")
    def get(self, request, schedule_id):
        return Response(ScheduleOutput(selectors.session_schedule_get(workspace=request.workspace,
                                                                      schedule_id=schedule_id)).data)

    @extend_schema(responses={204: None}, summary="Delete a schedule and its beat entry")
    def delete(self, request, schedule_id):
        schedule = selectors.session_schedule_get(workspace=request.workspace, schedule_id=schedule_id)
        schedules.session_schedule_delete(schedule=schedule)
        return Response(status=status.HTTP_204_NO_CONTENT)
