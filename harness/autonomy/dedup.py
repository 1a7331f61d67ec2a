"""Q/A marker dedup (seed 000's "Smaller substrate items"): markers (level 0, one per fire that
answered a question and cited moments) that ask the same question are folded into one level-1
provenance, drafted through the proposals gate (an L1 approves at once by default; the gate mirrors
the draft and its decision in the lake). A slow beat job; a marker already wrapped by a provenance is
never folded again, and a marker of a machine trigger (a heartbeat's, a cron's: `[Heartbeat] ...`,
written before fires stopped marking them) is no question and never folded.

"The same question" is the marker's title (its first line: the fire's question) lowercased with
its whitespace collapsed."""

from django.db import connection

from fathom.errors import ApplicationError
from fathom.models import Workspace
from harness.runtime.models import Trigger
from lake.models import PROVENANCE_TAG, QA_MARKER_TAG, Delta
from proposals.models import Proposal, ProposalStatus
from proposals.services import proposal_draft

PRODUCER = "autonomy:marker-dedup"
MIN_MARKERS = 2  # a question asked this many times is folded
MAX_GROUPS = 50  # per workspace and run: the next run takes the rest
MAX_MARKERS = 200  # per fold
DEDUP_TAG = "qa-dedup"
# The notes machine triggers leave as a fire's question ("[Heartbeat] tick"): no one asked them.
MACHINE_NOTES = [f"[{label.lower()}]%" for kind, label in Trigger.Kind.choices if kind in Trigger.MACHINE_KINDS]


def markers_dedup(*, workspace: Workspace, min_markers: int = MIN_MARKERS) -> list[Proposal]:
    """Fold every question asked `min_markers` times or more into a level-1 provenance proposal
    (one per question, skipped while an earlier fold of it is pending). Returns the proposals."""
    folded = []
    for question, marker_ids in duplicate_questions(workspace_id=workspace.pk, min_markers=min_markers):
        title = f"Asked {len(marker_ids)} times: {question}"[:300]
        if Proposal.objects.filter(workspace=workspace, producer=PRODUCER, status=ProposalStatus.PENDING,
                                   payload__from_ids__contains=marker_ids[:1]).exists():
            continue
        answers = Delta.objects.filter(workspace=workspace, pk__in=marker_ids).order_by("created_at")
        summary = "\n".join(f"- [{m.id}] {' '.join(m.content.split())[:200]}" for m in answers)
        try:
            proposal = proposal_draft(
                workspace=workspace, tool="provenance", title=title, level=1, producer=PRODUCER,
                rationale=f"{len(marker_ids)} Q/A markers ask the same question; one episode names them",
                payload={"from_ids": marker_ids, "summary": summary, "tags": [DEDUP_TAG]}, tags=[DEDUP_TAG])
        except ApplicationError:
            continue  # a marker vanished meanwhile: the next run sees the group as it is
        folded.append(proposal)
    return folded


def duplicate_questions(*, workspace_id: int, min_markers: int) -> list[tuple[str, list[str]]]:
    """(question, marker ids oldest first) for each question at least `min_markers` markers not yet
    wrapped by a provenance ask."""
    table = Delta._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"""
            SELECT q, (array_agg(id ORDER BY created_at, id))[1:{MAX_MARKERS}] FROM (
                SELECT m.id, m.created_at,
                       lower(regexp_replace(trim(split_part(m.content, E'\\n', 1)), '\\s+', ' ', 'g')) AS q
                FROM {table} m
                WHERE m.workspace_id = %(ws)s AND m.tags @> ARRAY[%(marker)s]::varchar[]
                  AND NOT EXISTS (SELECT 1 FROM {table} p WHERE p.workspace_id = %(ws)s
                                  AND p.tags @> ARRAY[%(provenance)s, 'from:' || m.id]::varchar[]
                                  AND NOT p.tags @> ARRAY[%(marker)s]::varchar[])) AS markers
            WHERE q <> '' AND NOT q LIKE ANY(%(machine)s) GROUP BY q HAVING count(*) >= %(min)s ORDER BY count(*) DESC, q LIMIT {MAX_GROUPS}""",
                       {"ws": workspace_id, "marker": QA_MARKER_TAG, "provenance": PROVENANCE_TAG, "min": min_markers,
                        "machine": MACHINE_NOTES})
        return cursor.fetchall()


def markers_dedup_all() -> int:
    """The beat job: every workspace. Returns how many folds were drafted."""
    return sum(len(markers_dedup(workspace=workspace)) for workspace in Workspace.objects.all())
