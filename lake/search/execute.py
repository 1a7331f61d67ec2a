"""Stage 2: execution. Each step is one SQL statement that takes the nearest deltas by their
embedding (HNSW), the nearest provenances by their centroid (HNSW over `provenance_embedding`,
which only provenance rows fill) and the best full-text matches (GIN over the generated tsvector),
and returns every candidate with all of its metrics. Fusion happens in `lake.search.rank`.

Filtered vector scans use pgvector 0.8's iterative index scans (`hnsw.iterative_scan`), so a
selective filter still yields the full number of candidates."""

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.models import Q

from fathom.llm.models import ModelAssignment
from lake.models import KIND_PREFIX, PROVENANCE_TAG, TEXT_SEARCH_CONFIG
from lake.search.plan import Filters, Step

# Stands in for "no centroid" in LEAST(summary distance, centroid distance), as in seed 000.
NO_DISTANCE = 999.0
COMMON_WORD_ROWS = 2000
COLUMNS = "d.id, d.created_at, d.source, d.tags, d.content, d.media_hash"
# A text rank: how many of the query's words the delta holds (coverage, as full text search
# engines count matched terms), plus ts_rank_cd normalised by log length into [0, 1) to order
# deltas that hold as many. Plain ts_rank_cd grows with a text's length: long logs outranked the
# short note that answered.
# The query's words as the text half looks for them (`text_query`: `query`, any of them; `each`,
# one tsquery a word), common words left out. Parameters: text, common.
TEXT_QUERY_SQL = f"""
    common AS (
        SELECT s.lexeme FROM pg_stats AS st, pg_class AS c,
            unnest(st.most_common_elems::text::text[], st.most_common_elem_freqs) AS s(lexeme, freq)
        WHERE st.schemaname = current_schema() AND st.tablename = 'lake_delta' AND st.attname = 'search_vector'
            AND c.oid = 'lake_delta'::regclass AND s.freq * c.reltuples > %(common)s
    ), words AS MATERIALIZED (
        SELECT chr(39) || replace(w.lexeme, chr(39), chr(39) || chr(39)) || chr(39) AS quoted
        FROM unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', %(text)s)) AS w
        WHERE w.lexeme NOT IN (SELECT lexeme FROM common WHERE lexeme IS NOT NULL) AND strpos(w.lexeme, chr(92)) = 0
    ), text_query AS MATERIALIZED (
        SELECT string_agg(quoted, ' | ')::tsquery AS query, array_agg(quoted::tsquery) AS each FROM words
    )"""
TEXT_RANK_SQL = ("((SELECT count(*) FROM unnest((SELECT each FROM text_query)) AS word WHERE d.search_vector @@ word)"
                 " + ts_rank_cd(d.search_vector, {tsquery}, 33))")


@dataclass
class Candidate:
    id: str
    created_at: datetime
    source: str
    tags: list[str]
    content: str
    media_hash: str
    summary_distance: float | None = None  # embedding <=> query
    centroid_distance: float | None = None  # provenance_embedding <=> query (provenance only)
    text_rank: float | None = None  # words of the query held + ts_rank_cd in [0, 1) (TEXT_RANK_SQL)
    # Per step: was it among the vector (summary or centroid) candidates / the text candidates;
    # and its distance and text rank for that step's query, whichever half found it.
    vector_steps: set[int] = field(default_factory=set)
    text_steps: set[int] = field(default_factory=set)
    step_distances: dict[int, float] = field(default_factory=dict)
    step_text_ranks: dict[int, float] = field(default_factory=dict)
    # The follow-up step (`lake.search.follow`): anchor id -> the share of that anchor's rarest words it holds.
    follow_shares: dict[str, float] = field(default_factory=dict)

    @property
    def distance(self) -> float | None:
        """The better of summary and centroid distance (see `vector_distance`)."""
        return vector_distance(self.summary_distance, self.centroid_distance)

    @property
    def matched_on(self) -> str | None:
        if self.summary_distance is None and self.centroid_distance is None:
            return None
        return "summary" if self.distance == self.summary_distance else "centroid"


def vector_distance(summary: float | None, centroid: float | None) -> float | None:
    """Seed 000's LEAST(summary distance, centroid distance), except that the centroid counts only
    where it is closer by SEARCH_CENTROID_MARGIN: an average of many vectors sits near almost any
    query, so a small edge says nothing, while a provenance whose words miss the query but whose
    constituents hit it (seed 000's "navier stokes research") is still found by its centroid."""
    if centroid is None:
        return summary
    if summary is None or centroid < summary - settings.SEARCH_CENTROID_MARGIN:
        return centroid
    return summary


def prepare(*, workspace_id: int, ef_search: int) -> bool:
    """Set this connection's vector scans (`ef_search`, pgvector 0.8's iterative scans so that a
    selective filter still fills the pool) and say whether the `planner` role has a model of its
    own in this workspace or the deployment: one round trip for both."""
    planner = ModelAssignment.objects.filter(Q(workspace_id=workspace_id) | Q(workspace=None), role="planner")
    planner_sql, planner_params = planner.values("pk")[:1].query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, false), set_config('hnsw.iterative_scan', 'relaxed_order', false), "
            f"EXISTS ({planner_sql})",
            [str(ef_search), *planner_params],
        )
        return cursor.fetchone()[2]


def run_step(*, workspace_id: int, index: int, step: Step, query_vector: str | None, pool: int,
             candidates: dict[str, Candidate]) -> int:
    """Run one step and merge what it finds into `candidates` (by id), each with both its vector
    distance and its text rank (whichever half found it); returns how many words of the query the
    text half looked for (the most a text rank can cover)."""
    where, params = filter_sql(step.filters)
    use_vector = query_vector is not None and step.mode in ("hybrid", "vector")
    use_text = step.mode in ("hybrid", "text") and step.query.strip()
    # Any word may match (OR): fusion with the vector ranking sorts out the best. A word that the
    # planner's statistics put in more than COMMON_WORD_ROWS deltas is left out: it says little
    # about any of them (think IDF), and ranking all its matches would cost more than the search.
    tsquery = "(SELECT query FROM text_query)" if use_text else "NULL::tsquery"
    vector = "%(vector)s::vector" if use_vector else "NULL::vector"
    rank_expression = TEXT_RANK_SQL.format(tsquery=tsquery)
    sql = f"""
        WITH vec AS MATERIALIZED (
            SELECT d.id FROM lake_delta AS d
            WHERE {"true" if use_vector else "false"} AND d.workspace_id = %(ws)s AND d.embedding IS NOT NULL {where}
            ORDER BY d.embedding <=> {vector} LIMIT %(pool)s
        ), cen AS MATERIALIZED (
            SELECT d.id FROM lake_delta AS d
            WHERE {"true" if use_vector else "false"} AND d.workspace_id = %(ws)s
                AND d.tags @> ARRAY['{PROVENANCE_TAG}']::varchar[] AND d.provenance_embedding IS NOT NULL {where}
            ORDER BY d.provenance_embedding <=> {vector} LIMIT %(pool)s
        ), {TEXT_QUERY_SQL}, txt AS MATERIALIZED (
            SELECT d.id, {rank_expression} AS text_rank FROM lake_delta AS d
            WHERE {"true" if use_text else "false"} AND d.workspace_id = %(ws)s AND d.search_vector @@ {tsquery} {where}
            ORDER BY text_rank DESC, d.id LIMIT %(pool)s
        ), found AS (
            SELECT id, true AS by_vector, false AS by_text FROM vec
            UNION ALL SELECT id, true, false FROM cen
            UNION ALL SELECT id, false, true FROM txt
        ), pool AS (
            SELECT id, bool_or(by_vector) AS by_vector, bool_or(by_text) AS by_text FROM found GROUP BY id
        )
        SELECT {COLUMNS}, d.embedding <=> {vector}, d.provenance_embedding <=> {vector}, pool.by_vector, pool.by_text,
            CASE WHEN d.search_vector @@ {tsquery} THEN {rank_expression} END,
            (SELECT coalesce(cardinality(each), 0) FROM text_query)
        FROM pool JOIN lake_delta AS d ON d.id = pool.id
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, {"ws": workspace_id, "vector": query_vector, "text": step.query, "pool": pool,
                             "common": COMMON_WORD_ROWS, **params})
        rows = cursor.fetchall()
    words = rows[0][11] if rows else 0
    for row in rows:
        candidate = candidates.get(row[0]) or candidate_from_row(row)
        candidates[candidate.id] = candidate
        summary, centroid, by_vector, by_text, text_rank = row[6:11]
        if summary is not None:
            candidate.summary_distance = _better(candidate.summary_distance, summary)
        if centroid is not None:
            candidate.centroid_distance = _better(candidate.centroid_distance, centroid)
        if summary is not None or centroid is not None:
            candidate.step_distances[index] = vector_distance(summary, centroid)
        if by_vector:
            candidate.vector_steps.add(index)
        if text_rank is not None:
            candidate.step_text_ranks[index] = text_rank
            candidate.text_rank = max(candidate.text_rank or 0.0, text_rank)
        if by_text:
            candidate.text_steps.add(index)
    return words


def candidate_from_row(row, *, with_distances: bool = False) -> Candidate:
    candidate = Candidate(id=row[0], created_at=row[1], source=row[2], tags=list(row[3]), content=row[4],
                          media_hash=row[5])
    if with_distances:
        candidate.summary_distance, candidate.centroid_distance = row[6], row[7]
    return candidate


def filter_sql(filters: Filters) -> tuple[str, dict]:
    """A step's filters as SQL conditions on `d` (each starting with AND) and their parameters."""
    parts, params = [], {}
    tags = list(filters.tags) + ([f"{KIND_PREFIX}{filters.kind.removeprefix(KIND_PREFIX)}"] if filters.kind else [])
    if tags:
        parts.append("d.tags @> %(f_tags)s::varchar[]")
        params["f_tags"] = tags
    if filters.source:
        parts.append("d.source = %(f_source)s")
        params["f_source"] = filters.source
    if filters.since:
        parts.append("d.created_at >= %(f_since)s")
        params["f_since"] = filters.since
    if filters.until:
        parts.append("d.created_at < %(f_until)s")
        params["f_until"] = filters.until
    return "".join(f" AND {part}" for part in parts), params


def _better(current: float | None, new: float) -> float:
    return new if current is None else min(current, new)
