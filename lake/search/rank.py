"""Stages 5 and 2's fusion: the valence rerank and reciprocal rank fusion.

Seed 000's valence rerank multiplies a hit's distance by 0.85 for provenance and sediment and by
0.92 for Q/A markers, so a named stretch ranks above a raw moment when both match. Made hybrid:
each step yields a vector ranking (by `LEAST(summary, centroid) distance x factor`) and a
full-text ranking (by `ts_rank_cd / factor`); every ranking of every step is fused by reciprocal
rank fusion, score = sum over rankings of 1 / (RRF_K + position). A vector neighbour at cosine
distance 1 or more (nothing in common) is not a match. Ties go to the smaller reranked
distance, then to the newer moment."""

from dataclasses import dataclass

from lake.models import PROVENANCE_TAG, QA_MARKER_TAG, SEDIMENT_TAG
from lake.search.execute import Candidate

RRF_K = 60
PROVENANCE_FACTOR = 0.85
QA_MARKER_FACTOR = 0.92
# A cosine distance of 1 or more means no likeness at all: such a neighbour is not a vector match.
UNRELATED = 1.0


@dataclass
class Ranked:
    candidate: Candidate
    rerank_factor: float
    reranked_distance: float | None
    vector_position: int | None  # best (1-based) position in a vector ranking of any step
    text_position: int | None
    rrf: float

    @property
    def found_by(self) -> list[str]:
        found = []
        if self.vector_position is not None:
            found.append("centroid" if self.candidate.matched_on == "centroid" else "vector")
        if self.text_position is not None:
            found.append("text")
        return found


def rerank_factor(tags) -> float:
    if QA_MARKER_TAG in tags:
        return QA_MARKER_FACTOR
    if PROVENANCE_TAG in tags or SEDIMENT_TAG in tags:
        return PROVENANCE_FACTOR
    return 1.0


def fuse(candidates: list[Candidate], steps: int) -> list[Ranked]:
    """The candidates that placed in some ranking, best first, each with the numbers that placed it."""
    factors = {c.id: rerank_factor(c.tags) for c in candidates}
    rrf = {c.id: 0.0 for c in candidates}
    vector_positions: dict[str, int] = {}
    text_positions: dict[str, int] = {}
    for step in range(steps):
        by_vector = sorted((c for c in candidates if step in c.vector_steps and c.step_distances[step] < UNRELATED),
                           key=lambda c: (c.step_distances[step] * factors[c.id], c.id))
        by_text = sorted((c for c in candidates if step in c.text_steps),
                         key=lambda c: (-c.step_text_ranks[step] / factors[c.id], c.id))
        for positions, ranking in ((vector_positions, by_vector), (text_positions, by_text)):
            for position, candidate in enumerate(ranking, start=1):
                rrf[candidate.id] += 1.0 / (RRF_K + position)
                positions[candidate.id] = min(positions.get(candidate.id, position), position)
    ranked = []
    for candidate in candidates:
        if not rrf[candidate.id]:
            continue  # in no ranking: a vector neighbour with nothing in common
        distance = candidate.distance
        factor = factors[candidate.id]
        ranked.append(Ranked(
            candidate=candidate, rerank_factor=factor,
            reranked_distance=None if distance is None else distance * factor,
            vector_position=vector_positions.get(candidate.id), text_position=text_positions.get(candidate.id),
            rrf=rrf[candidate.id],
        ))
    ranked.sort(key=lambda r: (-r.rrf, r.reranked_distance if r.reranked_distance is not None else 9e9,
                               -r.candidate.created_at.timestamp(), r.candidate.id))
    return ranked
