"""REST for proposals: draft, list, read, approve, deny. Views parse, call a service, serialise."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from fathom.auth import request_actor as _decider
from fathom.models import Role
from proposals import selectors, services
from proposals.models import Decision, Proposal, ProposalStatus


class DecisionOutput(serializers.ModelSerializer):
    class Meta:
        model = Decision
        fields = ["id", "action", "decided_by", "payload", "reason", "result_ref", "error", "created_at"]


class ProposalOutput(serializers.ModelSerializer):
    latest_decision = serializers.SerializerMethodField()

    class Meta:
        model = Proposal
        fields = ["id", "tool", "title", "payload", "level", "rationale", "producer", "status", "result_ref",
                  "failure_reason", "created_at", "decided_at", "latest_decision"]

    @extend_schema(responses=DecisionOutput(allow_null=True))
    def get_latest_decision(self, proposal) -> dict | None:
        decision = selectors.latest_decision(proposal)
        return DecisionOutput(decision).data if decision else None


class ProposalDetailOutput(ProposalOutput):
    decisions = serializers.SerializerMethodField()

    class Meta(ProposalOutput.Meta):
        fields = [*ProposalOutput.Meta.fields, "decisions"]

    @extend_schema(responses=DecisionOutput(many=True))
    def get_decisions(self, proposal) -> list:
        return DecisionOutput(proposal.decisions_newest, many=True).data


class ProposalListView(generics.ListAPIView):
    """The workspace's proposals, newest first."""

    serializer_class = ProposalOutput

    class Filters(serializers.Serializer):
        status = serializers.ChoiceField(choices=ProposalStatus.choices, required=False)
        tool = serializers.CharField(required=False)
        level = serializers.IntegerField(required=False, min_value=0)
        producer = serializers.CharField(required=False)

    @extend_schema(parameters=[Filters], summary="List proposals (filter by status, tool, level, producer)")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        filters = self.Filters(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return selectors.proposals_list(workspace=self.request.workspace, **filters.validated_data)


class ProposalDraftView(APIView):
    class Input(serializers.Serializer):
        tool = serializers.CharField(max_length=64)
        title = serializers.CharField(max_length=300)
        payload = serializers.JSONField()
        rationale = serializers.CharField(required=False, allow_blank=True, default="")
        level = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=0)
        producer = serializers.CharField(required=False, max_length=200,
                                         help_text="who drafts: fire:<id>, script:<name>; defaults to the API key")

    @extend_schema(request=Input, responses={201: ProposalOutput},
                   summary="Draft a proposal (L1/L2 provenance approves at once; the rest waits)")
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        body = proposal_draft_output(workspace=request.workspace, fields=data.validated_data,
                                     actor_id=request.user.actor_id)
        return Response(body, status=status.HTTP_201_CREATED)


def proposal_draft_output(*, workspace, fields: dict, actor_id: str) -> dict:
    """Draft the proposal `fields` (ProposalDraftView.Input, validated) describe, drafted by `actor_id`
    unless they name a producer: the proposal as it stands after the gate (ProposalOutput)."""
    proposal = services.proposal_draft(
        workspace=workspace, tool=fields["tool"], title=fields["title"], payload=fields["payload"],
        rationale=fields["rationale"], level=fields["level"], producer=fields.get("producer") or actor_id,
    )
    return ProposalOutput(selectors.proposal_get(workspace=workspace, proposal_id=proposal.pk)).data


class ProposalDetailView(APIView):
    @extend_schema(responses=ProposalDetailOutput, summary="A proposal with its decisions (newest first)")
    def get(self, request, proposal_id: int):
        proposal = selectors.proposal_get(workspace=request.workspace, proposal_id=proposal_id)
        return Response(ProposalDetailOutput(proposal).data)


class ProposalApproveView(APIView):
    """Owners and operators only. Approving an approved proposal is a no-op."""

    write_role = Role.OPERATOR

    class Input(serializers.Serializer):
        payload = serializers.JSONField(required=False, help_text="an edited payload to approve instead")

    @extend_schema(request=Input, responses=ProposalDetailOutput, summary="Approve (optionally with an edited payload)")
    def post(self, request, proposal_id: int):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        proposal = selectors.proposal_get(workspace=request.workspace, proposal_id=proposal_id)
        services.proposal_approve(proposal=proposal, decided_by=_decider(request),
                                  payload=data.validated_data.get("payload"))
        proposal = selectors.proposal_get(workspace=request.workspace, proposal_id=proposal_id)
        return Response(ProposalDetailOutput(proposal).data)


class ProposalDenyView(APIView):
    write_role = Role.OPERATOR

    class Input(serializers.Serializer):
        reason = serializers.CharField()

    @extend_schema(request=Input, responses=ProposalDetailOutput, summary="Deny, with a reason")
    def post(self, request, proposal_id: int):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        proposal = selectors.proposal_get(workspace=request.workspace, proposal_id=proposal_id)
        services.proposal_deny(proposal=proposal, decided_by=_decider(request), reason=data.validated_data["reason"])
        proposal = selectors.proposal_get(workspace=request.workspace, proposal_id=proposal_id)
        return Response(ProposalDetailOutput(proposal).data)
