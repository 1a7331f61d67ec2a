"""Reads the quality harness needs: what a workspace holds (for plan feasibility), the content of
cited deltas (for the citation check), and the sizes of a fire's tool results (context metrics)."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import or_

from django.db import connection
from django.db.models import Q
from django.db.models.functions import Length

from fathom.models import Workspace
from harness.fires.models import FireToolCall
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


def deltas_content_by_prefix(*, workspace: Workspace, prefixes: Sequence[str]) -> dict[str, str]:
    """{full id: content} of this workspace's deltas whose id starts with any of these lowercase
    hex prefixes (a full id is its own prefix), in one query. A prefix matching several deltas
    yields them all, so the caller can tell it is ambiguous."""
    if not prefixes:
        return {}
    matching = reduce(or_, (Q(id__startswith=prefix) for prefix in prefixes))
    return dict(Delta.objects.filter(matching, workspace=workspace).values_list("id", "content"))


def fire_tool_result_sizes(*, fire_id) -> list[tuple[str, int]]:
    """(tool name, result length in characters) of each tool call of a fire, in call order, in one
    query that never loads the results themselves: `metrics.context_metrics`'s input."""
    return list(FireToolCall.objects.filter(fire_id=fire_id).order_by("turn__number", "position")
                .values_list("name", Length("result")))
