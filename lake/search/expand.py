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
        cursor.execute(f"WITH RECURSIVE {_UP} SELECT parent_id, child_id, depth FROM lineage "
                       "ORDER BY depth, parent_id, child_id",
                       {"ids": list(delta_ids), "ws": workspace_id, "levels": max_levels})
        return cursor.fetchall()


def expansion(*, workspace_id: int, surfaced_ids: list[str], child_ids: list[str], known_ids: list[str],
              query_vector: str | None, max_levels: int = UP_LEVELS):
    """Both directions in one query: the lineage above `surfaced_ids` (as `ancestors` gives it) and
    the rows of the containers found and of `child_ids` that are not among `known_ids`, with their
    distances to the query. Returns (lineage, {id: Candidate})."""
    if not surfaced_ids:
        return [], {}
    vector = "%(vector)s::vector" if query_vector else "NULL::vector"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE {_UP}
            SELECT parent_id, child_id, depth, NULL AS id, NULL AS created_at, NULL AS source, NULL AS tags,
                   NULL AS content, NULL AS media_hash, NULL::float8, NULL::float8
            FROM lineage
            UNION ALL
            SELECT NULL, NULL, NULL, {COLUMNS}, d.embedding <=> {vector}, d.provenance_embedding <=> {vector}
            FROM lake_delta AS d
            WHERE d.workspace_id = %(ws)s AND d.id <> ALL(%(known)s::text[])
                AND d.id = ANY(ARRAY(SELECT parent_id FROM lineage) || %(children)s::text[])
            """,
            {"ids": list(surfaced_ids), "ws": workspace_id, "levels": max_levels, "known": list(known_ids),
             "children": list(child_ids), "vector": query_vector},
        )
        rows = cursor.fetchall()
    lineage = sorted((row[:3] for row in rows if row[0] is not None), key=lambda row: (row[2], row[0], row[1]))
    found = {row[3]: candidate_from_row(row[3:], with_distances=True) for row in rows if row[3] is not None}
    return lineage, found


# The child -> parent walk: `tags @> ARRAY['kind:provenance', 'from:<id>']` is answered by the GIN
# index over tags. Parameters: ids, ws, levels.
_UP = f"""
    up(parent_id, child_id, depth) AS (
        SELECT p.id, c.child_id, 1
        FROM unnest(%(ids)s::text[]) AS c(child_id)
        JOIN lake_delta AS p ON p.workspace_id = %(ws)s
            AND p.tags @> ARRAY['{PROVENANCE_TAG}', '{FROM_PREFIX}' || c.child_id]::varchar[]
      UNION
        SELECT p.id, up.parent_id, up.depth + 1
        FROM up
        JOIN lake_delta AS p ON p.workspace_id = %(ws)s
            AND p.tags @> ARRAY['{PROVENANCE_TAG}', '{FROM_PREFIX}' || up.parent_id]::varchar[]
        WHERE up.depth < %(levels)s
    ), lineage AS (
        SELECT parent_id, child_id, min(depth) AS depth FROM up GROUP BY parent_id, child_id
    )
"""
