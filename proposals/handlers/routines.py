"""`routines`: a prompt run on a cron schedule (seed 000's mint_routine). Approval creates the
routine and its django-celery-beat PeriodicTask."""

from django.utils.html import format_html
from rest_framework import serializers

from fathom.cron import cron_parse
from fathom.errors import ApplicationError
from proposals import scheduled_routines
from proposals.handlers import ProposalHandler, register
from proposals.models import Routine


class RoutinePayload(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    schedule = serializers.CharField(max_length=120, help_text="cron: minute hour day-of-month month day-of-week")
    prompt = serializers.CharField()
    route = serializers.CharField(max_length=200, allow_blank=True, default="")
    timezone = serializers.CharField(max_length=64, default="UTC")

    def validate_schedule(self, value):
        try:
            return str(cron_parse(value))
        except ApplicationError as exc:
            raise serializers.ValidationError(exc.message) from None

    def validate_timezone(self, value):
        try:
            return scheduled_routines.timezone_check(value)
        except ApplicationError as exc:
            raise serializers.ValidationError(exc.message) from None


class RoutinesHandler(ProposalHandler):
    tool = "routines"
    payload_serializer = RoutinePayload

    def check(self, *, workspace, payload):
        if Routine.objects.filter(workspace=workspace, name=payload["name"]).exists():
            raise ApplicationError(f"payload.name: a routine named {payload['name']!r} exists already",
                                   code="routine_exists")

    def execute(self, *, proposal, payload, decided_by):
        routine = scheduled_routines.routine_create(workspace=proposal.workspace, proposal=proposal, **payload)
        return f"routine:{routine.pk}"

    def render_html(self, *, proposal, payload):
        return format_html(
            "<p>Routine <strong>{}</strong> runs <code>{}</code> ({}), routed to {}</p><pre>{}</pre>",
            payload["name"], payload["schedule"], payload["timezone"], payload["route"] or "(default)",
            payload["prompt"],
        )


register(RoutinesHandler())
