"""`provenance`: wrap constituent deltas in a named stretch one level above them (seed 000:
episode L1, topic L2, era L3). Approval writes a kind:provenance delta with its centroid."""

from django.utils.html import format_html, format_html_join
from rest_framework import serializers

from proposals import lake_io
from proposals.handlers import ProposalHandler, register


class ProvenancePayload(serializers.Serializer):
    level = serializers.IntegerField(min_value=1, max_value=32)
    from_ids = serializers.ListField(child=serializers.CharField(max_length=64), min_length=1, max_length=1000)
    summary = serializers.CharField(allow_blank=True, default="", trim_whitespace=True)
    title = serializers.CharField(max_length=300, required=False, help_text="overrides the proposal's title")
    tags = serializers.ListField(child=serializers.CharField(max_length=200), default=list, max_length=50)
    test_questions = serializers.ListField(child=serializers.CharField(), default=list, max_length=20)

    def validate_from_ids(self, ids):
        return list(dict.fromkeys(ids))


class ProvenanceHandler(ProposalHandler):
    tool = "provenance"
    payload_serializer = ProvenancePayload
    has_level = True
    auto_approve_by_level = True

    def execute(self, *, proposal, payload, decided_by):
        tags = [*payload["tags"], f"approved-from-proposal:{proposal.pk}", f"decided-by:{decided_by}"]
        return lake_io.provenance_write(
            workspace=proposal.workspace, title=payload.get("title") or proposal.title,
            child_ids=payload["from_ids"], level=payload["level"], content=payload["summary"], tags=tags,
        )

    def render_html(self, *, proposal, payload):
        found = {c.id: c for c in lake_io.constituents(workspace=proposal.workspace, ids=payload["from_ids"])}
        rows = format_html_join(
            "", "<li><code>{}</code> <small>{}</small><div class='constituent'>{}</div></li>",
            ((cid, " ".join(found[cid].tags) if cid in found else "(not in the lake)",
              found[cid].content if cid in found else "") for cid in payload["from_ids"]),
        )
        return format_html(
            "<p><strong>Level {}</strong> wrapping {} constituent(s)</p><p>{}</p><ol class='constituents'>{}</ol>",
            payload["level"], len(payload["from_ids"]), payload.get("summary", ""), rows,
        )


register(ProvenanceHandler())
