"""Stages 3 and 4: timeline strips around the hits, and provenance expansion, in one query.

- Strips: the `width` deltas just before and just after each moment hit, in time (provenance rows
  are not moments of the timeline and never fill a strip).
- Down: a provenance or sediment hit pulls in its `from:` children (one hop). Their ids are in the
  hit's tags; the query only fetches the rows not already at hand.
- Up: every surfaced delta (hits, their strips, the children) finds the provenance containing it,
  and that provenance's container, up to 3 levels (base -> L1 episode -> L2 topic -> L3 era),
  recursively over the GIN index on `tags` (the child -> parent index, the same in every process).

One round trip for all of it: under load every trip to the database waits for a CPU."""

from dataclasses import dataclass, field

from django.db import connection

from lake.models import FROM_PREFIX, PROVENANCE_TAG
from lake.search.execute import COLUMNS, Candidate, candidate_from_row

UP_LEVELS = 3


@dataclass
class Surroundings:
    strips: dict[str, list[Candidate]] = field(default_factory=dict)  # moment hit id -> its neighbours
    lineage: list[tuple[str, str, int]] = field(default_factory=list)  # (provenance, contained, depth)
    rows: dict[str, Candidate] = field(default_factory=dict)  # containers and children not known before


def surroundings(*, workspace_id: int, anchors: list[tuple[str, object]], width: int, expand: bool,
                 hit_ids: list[str], child_ids: list[str], known_ids: list[str],
                 query_vector: str | None) -> Surroundings:
    """Strips of `width` around the moment hits given as (id, created_at) in `anchors`; with
    `expand`, the lineage above the hits, their strips and `child_ids`, and the rows of the
    containers found and of `child_ids` that are not among `known_ids` (nor on a strip)."""
    if not (expand or (anchors and width > 0)):
        return Surroundings()
    vector = "%(vector)s::vector" if query_vector else "NULL::vector"
    side = """
        SELECT {columns}, d.embedding <=> {vector} AS summary_distance,
               d.provenance_embedding <=> {vector} AS centroid_distance
        FROM lake_delta AS d
        WHERE d.workspace_id = %(ws)s AND (d.created_at, d.id) {op} (h.at, h.anchor)
            AND NOT d.tags @> ARRAY['{provenance}']::varchar[]
        ORDER BY d.created_at {order}, d.id {order} LIMIT %(width)s
    """
    before = side.format(columns=COLUMNS, vector=vector, op="<", order="DESC", provenance=PROVENANCE_TAG)
    after = side.format(columns=COLUMNS, vector=vector, op=">", order="ASC", provenance=PROVENANCE_TAG)
    nulls = ("NULL::varchar, NULL::timestamptz, NULL::varchar, NULL::varchar[], NULL::text, NULL::varchar, "
             "NULL::float8, NULL::float8")
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE strip AS MATERIALIZED (
                SELECT h.anchor, n.* FROM unnest(%(anchors)s::text[], %(ats)s::timestamptz[]) AS h(anchor, at)
                CROSS JOIN LATERAL (({before}) UNION ALL ({after})) AS n
            ), surfaced(id) AS (
                SELECT unnest(%(ids)s::text[]) WHERE %(expand)s UNION SELECT id FROM strip WHERE %(expand)s
            ), {_UP.replace("unnest(%(ids)s::text[])", "surfaced")}
            SELECT 'strip', strip.anchor::text, NULL::text, NULL::int, strip.id, strip.created_at, strip.source,
                   strip.tags, strip.content, strip.media_hash, strip.summary_distance, strip.centroid_distance
            FROM strip
            UNION ALL
            SELECT 'up', parent_id::text, child_id::text, depth, {nulls} FROM lineage
            UNION ALL
            SELECT 'row', NULL, NULL, NULL, d.id, d.created_at, d.source, d.tags, d.content, d.media_hash,
                   d.embedding <=> {vector}, d.provenance_embedding <=> {vector}
            FROM lake_delta AS d
            WHERE %(expand)s AND d.workspace_id = %(ws)s
                AND d.id = ANY(ARRAY(SELECT parent_id FROM lineage) || %(children)s::text[])
                AND d.id <> ALL(%(known)s::text[]) AND d.id NOT IN (SELECT id FROM strip)
            """,
            {"ws": workspace_id, "anchors": [a[0] for a in anchors], "ats": [a[1] for a in anchors],
             "width": max(width, 0), "vector": query_vector, "expand": expand, "ids": list(hit_ids) + list(child_ids),
             "levels": UP_LEVELS, "children": list(child_ids), "known": list(known_ids)},
        )
        rows = cursor.fetchall()
    found = Surroundings()
    for kind, first, second, depth, *delta in rows:
        if kind == "strip":
            found.strips.setdefault(first, []).append(candidate_from_row(delta, with_distances=True))
        elif kind == "up":
            found.lineage.append((first, second, depth))
        else:
            found.rows[delta[0]] = candidate_from_row(delta, with_distances=True)
    found.lineage.sort(key=lambda row: (row[2], row[0], row[1]))
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
