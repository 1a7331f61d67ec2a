"""Stages 3 and 4: timeline strips around the hits, and provenance expansion.

- Strips: the `width` deltas just before and just after each moment hit, in time (provenance rows
  are not moments of the timeline and never fill a strip). One query for all hits.
- Down: a provenance or sediment hit pulls in its `from:` children (one hop). Their ids are in the
  hit's tags, so this needs no query of its own.
- Up: every surfaced delta finds the provenance containing it, and that provenance's container,
  up to 3 levels (base -> L1 episode -> L2 topic -> L3 era), in one recursive query over the GIN
  index on `tags` (the child -> parent index, the same in every process)."""

from django.db import connection

from lake.models import FROM_PREFIX, PROVENANCE_TAG
from lake.search.execute import COLUMNS, candidate_from_row

UP_LEVELS = 3


def strips(*, workspace_id: int, anchors: list[tuple[str, object]], width: int, query_vector: str | None):
    """{anchor id: [neighbour Candidate, ...]} for moment hits given as (id, created_at)."""
    if not anchors or width <= 0:
        return {}
    vector = "%(vector)s::vector" if query_vector else "NULL::vector"
    side = """
        SELECT {columns}, d.embedding <=> {vector}, d.provenance_embedding <=> {vector}
        FROM lake_delta AS d
        WHERE d.workspace_id = %(ws)s AND (d.created_at, d.id) {op} (h.at, h.anchor)
            AND NOT d.tags @> ARRAY['{provenance}']::varchar[]
        ORDER BY d.created_at {order}, d.id {order} LIMIT %(width)s
    """
    before = side.format(columns=COLUMNS, vector=vector, op="<", order="DESC", provenance=PROVENANCE_TAG)
    after = side.format(columns=COLUMNS, vector=vector, op=">", order="ASC", provenance=PROVENANCE_TAG)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT h.anchor, n.* FROM unnest(%(ids)s::text[], %(ats)s::timestamptz[]) AS h(anchor, at)
            CROSS JOIN LATERAL (({before}) UNION ALL ({after})) AS n
            """,
            {"ws": workspace_id, "ids": [a[0] for a in anchors], "ats": [a[1] for a in anchors], "width": width,
             "vector": query_vector},
        )
        rows = cursor.fetchall()
    found: dict[str, list] = {}
    for row in rows:
        found.setdefault(row[0], []).append(candidate_from_row(row[1:], with_distances=True))
    return found


def ancestors(*, workspace_id: int, delta_ids: list[str], max_levels: int = UP_LEVELS) -> list[tuple[str, str, int]]:
    """(provenance id, contained id, depth) for the provenance containing each of `delta_ids`,
    and so on up to `max_levels` hops; depth 1 contains a surfaced delta directly."""
    if not delta_ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE up(parent_id, child_id, depth) AS (
                SELECT p.id, c.child_id, 1
                FROM unnest(%s::text[]) AS c(child_id)
                JOIN lake_delta AS p ON p.workspace_id = %s
                    AND p.tags @> ARRAY['{PROVENANCE_TAG}', '{FROM_PREFIX}' || c.child_id]::varchar[]
              UNION
                SELECT p.id, up.parent_id, up.depth + 1
                FROM up
                JOIN lake_delta AS p ON p.workspace_id = %s
                    AND p.tags @> ARRAY['{PROVENANCE_TAG}', '{FROM_PREFIX}' || up.parent_id]::varchar[]
                WHERE up.depth < %s
            )
            SELECT parent_id, child_id, min(depth) FROM up GROUP BY parent_id, child_id
            ORDER BY min(depth), parent_id, child_id
            """,
            [list(delta_ids), workspace_id, workspace_id, max_levels],
        )
        return cursor.fetchall()
