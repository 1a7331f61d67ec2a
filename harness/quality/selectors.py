"""Reads the quality harness needs: what a workspace holds (for plan feasibility), the content of
cited deltas (for the citation check), the sizes of a fire's tool results (context metrics) and
its quality runs' figures (the workspace profile)."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import or_

from django.db import connection
from django.db.models import Count, Q

from fathom.models import Workspace
from harness.fires.models import FireToolCall, FireTurn
from harness.quality.models import Feedback, QualityAttempt, QualityRun
from lake.models import KIND_PREFIX, LEVEL_PREFIX, PROVENANCE_TAG, Delta


@dataclass(frozen=True)
class WorkspaceStats:
    """What the lake of a workspace holds: deltas in all, per kind (`kind:<kind>` tags; a delta may
    carry several) and provenance per level."""

    delta_count: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    provenance_by_level: dict[int, int] = field(default_factory=dict)

    @property
    def provenance_count(self) -> int:
        return self.kinds.get(PROVENANCE_TAG.removeprefix(KIND_PREFIX), 0)


def workspace_stats(*, workspace: Workspace) -> WorkspaceStats:
    """Counts of the workspace's deltas, kinds and provenance levels, in one query (a scan of the
    workspace's tags: run it once per fire that needs it, not per plan)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT NULL, count(*) FROM lake_delta WHERE workspace_id = %s "
            "UNION ALL "
            "SELECT tag, count(*) FROM lake_delta CROSS JOIN LATERAL unnest(tags) AS tag "
            "WHERE workspace_id = %s AND (tag LIKE %s OR tag LIKE %s) GROUP BY tag",
            [workspace.pk, workspace.pk, f"{KIND_PREFIX}%", f"{LEVEL_PREFIX}%"])
        rows = cursor.fetchall()
    total, kinds, levels = 0, {}, {}
    for tag, count in rows:
        if tag is None:
            total = count
        elif tag.startswith(KIND_PREFIX):
            kinds[tag.removeprefix(KIND_PREFIX)] = count
        else:
            try:
                levels[int(tag.removeprefix(LEVEL_PREFIX))] = count
            except ValueError:
                continue
    return WorkspaceStats(delta_count=total, kinds=kinds, provenance_by_level=levels)


def deltas_by_prefix(*, workspace: Workspace | int, prefixes: Sequence[str]) -> dict[str, tuple[str, str]]:
    """{full id: (content, source)} of this workspace's deltas whose id starts with any of these
    lowercase hex prefixes (a full id is its own prefix), in one query. A prefix matching several
    deltas yields them all, so the caller can tell it is ambiguous."""
    if not prefixes:
        return {}
    matching = reduce(or_, (Q(id__startswith=prefix) for prefix in prefixes))
    return {delta_id: (content, source) for delta_id, content, source in
            Delta.objects.filter(matching, workspace=workspace).values_list("id", "content", "source")}


def fire_tool_result_sizes(*, fire_id) -> list[tuple[str, int]]:
    """(tool name, result length in characters) of each tool call of a fire, in call order, in one
    query that never loads the results themselves: `metrics.context_metrics`'s input."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT c.name, length(c.result) FROM {FireToolCall._meta.db_table} c "
                       f"JOIN {FireTurn._meta.db_table} t ON t.id = c.turn_id WHERE c.fire_id = %s "
                       f"ORDER BY t.number, c.position", [fire_id])
        return [tuple(row) for row in cursor.fetchall()]


@dataclass(frozen=True)
class RunsStats:
    """The final attempts of a workspace's most recent done quality runs, summed (the profile's input)."""

    runs: int  # done runs in all
    counted: int  # of which in the window
    combined_sum: float
    combined_count: int  # the window's final attempts with a combined score
    score_sum: float  # their verifier scores (0 when none)
    issues: list[str]  # their contract's and verifier's issues
    feedback_fires: int  # the workspace's fires with feedback


def runs_stats(*, workspace_id, window: int, excluding_run_id=None) -> RunsStats:
    """The final attempts of the workspace's `window` most recent done runs (but one), summed in one
    query, which reads of each only the figures and issues (never a whole contract); the done runs
    counted apart only when there are more than the window holds."""
    attempts, runs, feedback = (QualityAttempt._meta.db_table, QualityRun._meta.db_table, Feedback._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH finals AS (SELECT fa.combined, fa.contract -> 'issues' AS contract_issues, "
            f"fa.verifier -> 'issues' AS verifier_issues, coalesce((fa.verifier ->> 'score')::float8, 0) AS score "
            f"FROM {attempts} fa JOIN {runs} fr ON fr.id = fa.run_id AND fa.number = fr.final_attempt "
            f"WHERE fr.workspace_id = %s AND fr.state = %s AND fr.id IS DISTINCT FROM %s "
            f"ORDER BY fa.created_at DESC LIMIT %s) "
            f"SELECT count(*), coalesce(sum(combined), 0), count(combined), coalesce(sum(score), 0), "
            f"(SELECT coalesce(array_agg(issue), '{{}}') FROM finals, jsonb_array_elements_text("
            f"{_array('contract_issues')} || {_array('verifier_issues')}) AS issue), "
            f"(SELECT count(DISTINCT fire_id) FROM {feedback} WHERE workspace_id = %s) FROM finals",
            [workspace_id, QualityRun.State.DONE, excluding_run_id, window, workspace_id])
        counted, combined_sum, combined_count, score_sum, issues, feedback_fires = cursor.fetchone()
    total = counted
    if counted >= window:
        total = QualityRun.objects.filter(workspace_id=workspace_id, state=QualityRun.State.DONE).exclude(
            pk=excluding_run_id).count()
    return RunsStats(runs=total, counted=counted, combined_sum=float(combined_sum), combined_count=combined_count,
                     score_sum=float(score_sum), issues=list(issues), feedback_fires=feedback_fires)


def _array(column: str) -> str:
    return f"CASE WHEN jsonb_typeof({column}) = 'array' THEN {column} ELSE '[]'::jsonb END"


# --- The operator dashboard's reads (dashboard) -----------------------------------------------

def quality_runs_of_fires(*, workspace, fire_ids) -> dict:
    """{fire id: its QualityRun with its attempts} for these fires (two queries; fires the harness did
    not wrap are absent)."""
    runs = QualityRun.objects.filter(workspace=workspace, fire_id__in=list(fire_ids)).prefetch_related("attempts")
    return {run.fire_id: run for run in runs}


def feedback_counts_of_fires(*, workspace, fire_ids) -> dict:
    """{fire id: {"up": n, "down": n}} of the thumbs given on these fires, in one query."""
    counts: dict = {}
    rows = (Feedback.objects.filter(workspace=workspace, fire_id__in=list(fire_ids)).values("fire_id", "rating")
            .annotate(count=Count("id")))
    for row in rows:
        counts.setdefault(row["fire_id"], {"up": 0, "down": 0})[row["rating"]] = row["count"]
    return counts
