"""The follow-up step: a second, bounded text retrieval on the best hit's rarest words.

A question whose answer is spread over two moments ("which city is Maya travelling to next
month?": one turn says Ruth invited her for next month, an earlier one that Ruth moved to Porto)
finds the moment that shares its words and misses the one that shares none but a name. So once
the first ranking is fused, the best FOLLOW_ANCHORS source moments (anchors: not provenance rows,
not the agent's own output) are each read for their rarest words, the way a reader follows a
name: the lexemes of it that the query does not hold, that hold a letter (numbers are
measurements, not things to follow) and that at most FOLLOW_MAX_ROWS deltas of the workspace
hold, the anchor included; of those, the ones held by the fewest deltas. The deltas that hold
them join the candidates, and `rank.fuse` gives each a share of its anchor's score (never past
the anchor).

Bounded: one SQL statement, no model call. An anchor's first FOLLOW_MAX_WORDS words are counted
(a long log has thousands), each count stopping at FOLLOW_MAX_ROWS + 1; the deltas found are at
most `pool`. The counts are the workspace's own: PostgreSQL's statistics are the table's, and a
name common in one workspace may be rare in another. Run in hybrid and text mode (it is a text retrieval), for a plan of one step
(the default plan), under the same filters as that step."""

from dataclasses import dataclass

from django.db import connection

from lake.models import PROVENANCE_TAG, SEDIMENT_TAG, TEXT_SEARCH_CONFIG, is_agent_output
from lake.search.execute import (
    COLUMNS,
    COMMON_WORD_ROWS,
    TEXT_QUERY_SQL,
    TEXT_RANK_SQL,
    Candidate,
    candidate_from_row,
    filter_sql,
    vector_distance,
)
from lake.search.plan import Step

FOLLOW_MAX_ROWS = 5  # a word at most this many deltas hold names one thing (a person, a place, an id)
FOLLOW_ANCHORS = 3  # the best source moments followed: two may tie on the question's words
FOLLOW_MAX_WORDS = 100  # of an anchor's words counted, its first ones (a long log has thousands)


@dataclass(frozen=True)
class FollowUp:
    anchor_ids: tuple[str, ...]  # the best source moments followed, best first


def anchors_of(ranked, *, most: int = FOLLOW_ANCHORS) -> list[Candidate]:
    """The best `most` source moments of a fused ranking (`rank.Ranked` items, best first)."""
    anchors = []
    for item in ranked:
        candidate = item.candidate
        if len(anchors) == most:
            break
        if PROVENANCE_TAG in candidate.tags or SEDIMENT_TAG in candidate.tags:
            continue
        if is_agent_output(source=candidate.source, tags=candidate.tags):
            continue
        anchors.append(candidate)
    return anchors


def follow_up(*, workspace_id: int, anchors: list[Candidate], step: Step, query_vector: str | None, pool: int,
              candidates: dict[str, Candidate]) -> FollowUp | None:
    """Follow each anchor's rarest words (see the module): merge the deltas that hold them into
    `candidates`, each with the share of each anchor's words it holds (`follow_shares`); None when
    no anchor has a word rare enough."""
    if not anchors:
        return None
    where, params = filter_sql(step.filters)
    vector = "%(vector)s::vector" if query_vector else "NULL::vector"
    quoted = "chr(39) || {lexeme} || chr(39)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH {TEXT_QUERY_SQL}, own AS MATERIALIZED (
                SELECT a.id AS anchor, w.lexeme
                FROM lake_delta AS a CROSS JOIN LATERAL (
                    SELECT w.lexeme FROM unnest(a.search_vector) AS w
                    WHERE w.lexeme ~ '[[:alpha:]]' AND strpos(w.lexeme, chr(39)) = 0 AND strpos(w.lexeme, chr(92)) = 0
                        AND w.lexeme NOT IN (SELECT q.lexeme FROM unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', %(text)s)) AS q)
                    ORDER BY w.positions[1], w.lexeme LIMIT %(words)s
                ) AS w
                WHERE a.id = ANY(%(anchors)s::text[]) AND a.workspace_id = %(ws)s
            ), counted AS MATERIALIZED (
                SELECT l.lexeme, (SELECT count(*) FROM (
                    SELECT 1 FROM lake_delta AS x
                    WHERE x.workspace_id = %(ws)s AND x.search_vector @@ ({quoted.format(lexeme="l.lexeme")})::tsquery
                    LIMIT %(most)s + 1) AS held) AS held_by
                FROM (SELECT DISTINCT lexeme FROM own) AS l
            ), scored AS MATERIALIZED (
                SELECT own.anchor, own.lexeme, counted.held_by,
                    min(counted.held_by) FILTER (WHERE counted.held_by >= 2) OVER (PARTITION BY own.anchor) AS rarest
                FROM own JOIN counted USING (lexeme)
            ), wanted AS MATERIALIZED (
                SELECT anchor, string_agg({quoted.format(lexeme="lexeme")}, ' | ')::tsquery AS query,
                    array_agg(({quoted.format(lexeme="lexeme")})::tsquery) AS each
                FROM scored WHERE held_by = rarest AND held_by <= %(most)s GROUP BY anchor
            )
            SELECT {COLUMNS}, d.embedding <=> {vector}, d.provenance_embedding <=> {vector}, w.anchor,
                (SELECT count(*) FROM unnest(w.each) AS word WHERE d.search_vector @@ word)::float
                    / cardinality(w.each),
                CASE WHEN d.search_vector @@ (SELECT query FROM text_query) THEN {TEXT_RANK_SQL.format(tsquery="(SELECT query FROM text_query)")} END
            FROM wanted AS w JOIN lake_delta AS d ON d.workspace_id = %(ws)s AND d.search_vector @@ w.query
            WHERE d.id <> w.anchor {where}
            ORDER BY array_position(%(anchors)s::text[], w.anchor::text), d.id LIMIT %(pool)s
            """,
            {"ws": workspace_id, "anchors": [anchor.id for anchor in anchors], "text": step.query,
             "most": FOLLOW_MAX_ROWS, "words": FOLLOW_MAX_WORDS, "vector": query_vector, "pool": pool, "common": COMMON_WORD_ROWS,
             **params},
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    for row in rows:
        candidate = candidates.get(row[0])
        if candidate is None:  # new: scored on the query like the step's own candidates
            candidate = candidates[row[0]] = candidate_from_row(row, with_distances=True)
            if row[6] is not None or row[7] is not None:
                candidate.step_distances[0] = vector_distance(row[6], row[7])
            if row[10] is not None:
                candidate.step_text_ranks[0] = candidate.text_rank = row[10]
        candidate.follow_shares[row[8]] = row[9]
    return FollowUp(anchor_ids=tuple(anchor.id for anchor in anchors))
