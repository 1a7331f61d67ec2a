"""'Why this surfaced' (seed 000's productized UX): for a delta a fire wrote (a card, an attestation,
a directive, a Q/A marker...), the fire that produced it, with its turns, tool calls, trace and the
deltas it cited."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.errors import NotFoundError
from harness.fires.api import FireOutput, fire_detail
from harness.fires.models import Fire
from harness.fires.selectors import fire_get
from lake.models import Delta
from lake.selectors import delta_get

FIRE_TAG = "fire:"


def fire_of_delta(*, workspace, delta_id: str) -> tuple[Delta, Fire]:
    """The delta and the fire whose tag it carries; NotFoundError when no fire of this workspace wrote it."""
    delta = delta_get(workspace=workspace, id_or_prefix=delta_id)
    fire_id = next((tag.removeprefix(FIRE_TAG) for tag in delta.tags if tag.startswith(FIRE_TAG)), None)
    if fire_id is None:
        raise NotFoundError(f"delta {delta.id} was not written by a fire", details={"id": delta.id})
    return delta, fire_get(workspace=workspace, fire_id=fire_id)


class CitationOutput(serializers.Serializer):
    id = serializers.CharField()
    verb = serializers.ChoiceField(choices=["cited", "dropped"])
    found = serializers.BooleanField(help_text="false: the id is not (or no longer) in the lake")
    tags = serializers.ListField(child=serializers.CharField())
    content = serializers.CharField(allow_blank=True)


class WhyOutput(serializers.Serializer):
    delta_id = serializers.CharField()
    citations = CitationOutput(many=True)
    fire = FireOutput(help_text="with its turns, their tool calls, and its trace")


class DeltaWhyView(APIView):
    @extend_schema(responses=WhyOutput, summary="Why this surfaced: the fire that wrote the delta and what it cited")
    def get(self, request, delta_id):
        delta, fire = fire_of_delta(workspace=request.workspace, delta_id=delta_id)
        wanted = [("cited", i) for i in fire.response.get("cited_ids", [])] + [
            ("dropped", i) for i in fire.response.get("dropped_ids", [])]
        found = Delta.objects.filter(workspace=request.workspace, pk__in=[i for _, i in wanted]).in_bulk()
        citations = [{"id": i, "verb": verb, "found": i in found, "tags": found[i].tags if i in found else [],
                      "content": found[i].content if i in found else ""} for verb, i in wanted]
        return Response({"delta_id": delta.id, "citations": citations, "fire": fire_detail(fire)})
