"""`helper-dispatch`: a task for a helper (e.g. claude-code) on a configured host (seed 000's
dispatch_helper). Approval queues a job on the `fires` queue; its output lands in the lake."""

from django.utils.html import format_html
from rest_framework import serializers

from proposals import helper_jobs
from proposals.handlers import ProposalHandler, register


class HelperDispatchPayload(serializers.Serializer):
    host = serializers.SlugField(max_length=64)
    task = serializers.CharField(max_length=100_000)


class HelperDispatchHandler(ProposalHandler):
    tool = "helper-dispatch"
    payload_serializer = HelperDispatchPayload

    def check(self, *, workspace, payload):
        helper_jobs.helper_host_get(workspace=workspace, name=payload["host"])

    def execute(self, *, proposal, payload, decided_by):
        job = helper_jobs.helper_job_create(workspace=proposal.workspace, host=payload["host"], task=payload["task"],
                                         title=proposal.title, proposal=proposal)
        return f"helper-job:{job.pk}"

    def render_html(self, *, proposal, payload):
        return format_html("<p>On host <strong>{}</strong>:</p><pre>{}</pre>", payload["host"], payload["task"])


register(HelperDispatchHandler())
