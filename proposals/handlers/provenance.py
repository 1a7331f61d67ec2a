"""`provenance`: wrap constituent deltas in a named stretch one level above them (seed 000:
episode L1, topic L2, era L3). Approval writes a kind:provenance delta with its centroid."""

from django.utils.html import format_html, format_html_join
from rest_framework import serializers

from lake.services import provenance_level_check, provenance_level_default
from proposals import lake_io
from proposals.handlers import ProposalHandler, register


class ProvenancePayload(serializers.Serializer):
    level = serializers.IntegerField(min_value=1, max_value=32, required=False, allow_null=True,
                                     help_text="omitted: one above the highest constituent")
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

    def clean(self, *, workspace, payload, check=True):
        """Constituents resolve to full ids (prefixes allowed, unknown ones refused); a missing level
        becomes the lowest the constituents allow. With `check`, what approval would refuse is
        refused now (`check`)."""
        cleaned = super().clean(workspace=workspace, payload=payload, check=False)
        children = lake_io.constituents_resolve(workspace=workspace, ids=cleaned["from_ids"])
        cleaned["from_ids"] = list(dict.fromkeys(child.id for child in children))
        if cleaned.get("level") is None:
            cleaned["level"] = provenance_level_default(children=children)
        if check:
            self.check(workspace=workspace, payload=cleaned)
        return cleaned

    def check(self, *, workspace, payload):
        """The lake's rules, checked before anything is recorded: the level sits strictly above every
        constituent (`provenance_level`), and the same material at the same level is not named twice
        (`provenance_exists`: the lake holds a provenance over exactly these constituents)."""
        children = lake_io.constituents_resolve(workspace=workspace, ids=payload["from_ids"])
        provenance_level_check(children=children, level=payload["level"])
        lake_io.provenance_unnamed_check(workspace=workspace, child_ids=[child.id for child in children],
                                         level=payload["level"])

    def execute(self, *, proposal, payload, decided_by):
        tags = [*payload["tags"], f"approved-from-proposal:{proposal.pk}", f"decided-by:{decided_by}"]
        return lake_io.provenance_write(
            workspace=proposal.workspace, title=payload.get("title") or proposal.title,
            child_ids=payload["from_ids"], level=payload["level"], content=payload["summary"], tags=tags,
        )

    def render_html(self, *, proposal, payload):
        found = lake_io.constituents(workspace=proposal.workspace, ids=payload["from_ids"])
        rows = format_html_join(
            "", "<li><code>{}</code> <small>{}</small><pre class='constituent'>{}</pre></li>",
            ((cid, " ".join(found[cid].tags) if cid in found else "(not in the lake)",
              found[cid].content if cid in found else "") for cid in payload["from_ids"]),
        )
        return format_html(
            "<p><strong>Level {}</strong> over {} constituent(s)</p><p>{}</p><ol class='constituents'>{}</ol>",
            payload["level"], len(payload["from_ids"]), payload.get("summary", ""), rows,
        )


register(ProvenanceHandler())
