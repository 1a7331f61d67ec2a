"""Stages 5 and 2's fusion: the valence rerank, the fusion of the vector and text rankings, the
relevance floor, repeated moments shown once and the provenance cap.

Seed 000's valence rerank multiplies a hit's distance by 0.85 for provenance and sediment and by
0.92 for Q/A markers, so a named stretch ranks above a raw moment when both match. Made hybrid,
every candidate of a step carries both its vector distance and its text rank (whichever half
found it), and SEARCH_FUSION chooses how they combine, per step, summed over the plan's steps:

- `weighted` (the default, chosen on the labelled benchmark): a convex combination of the two
  scores, each in [0, 1]: vector_weight x (floor - distance x factor) / floor (similarity above
  chance: 0 at the embedder's relevance floor, 1 at distance 0) + text_weight x
  (text rank / factor) / (query words + 1), the text rank being the query words a delta holds
  plus a length-normalised ts_rank_cd below 1 (`execute.TEXT_RANK_SQL`). The scores carry what
  ranks lose: a long log that holds every word of a question but sits far from it as a whole
  vector beats the short notes that hold two of its words. The vector weight leans with the text
  half's confidence (`leaning_vector_weight`): as set when the best text match holds every word
  the query looked for, up to the text weight when it holds none, so a paraphrase is ranked by
  meaning rather than by the one word it happens to share with the wrong note.
- `rrf`: reciprocal rank fusion, sum over rankings of weight / (k + position), each ranking being
  the half's own candidates (a smaller k lets first places count for more).

Then the lake's links (in every mode, both fusions): a candidate that a matching provenance or
sediment row among the candidates contains inherits CONTAINER_SHARE of that row's score
(`inherited_scores`), and a delta the follow-up step found (`lake.search.follow`) gets the same
share of its anchor's score times the share of the anchor's rare words it holds
(`followed_scores`); neither ever passes the row it inherits from.

Ties go to the smaller reranked distance, counted only within the vector floor (beyond it a
distance is no closer than unrelated text, so among equal text matches the vector half does not
place, hybrid keeps text mode's order), then to the newer moment.

The relevance floor keeps a candidate out of a half it does not belong in: a vector distance
beyond SEARCH_VECTOR_MAX_DISTANCE (by default calibrated for the embedder: `floor.py`), a text rank below
SEARCH_TEXT_MIN_RANK. A candidate in neither half is not a hit, so a query that matches nothing
well returns no hits.

A moment that repeats a better-ranked one's text word for word is left out (`without_repeats`).

The provenance cap: provenance rows take at most SEARCH_PROVENANCE_SHARE of the hits a search
returns (one may come when no moment matched at all); the slots left go to the next moments, so a summary never crowds
out the moments it summarises (it still surfaces as a container of the moments that are hits)."""

import math
from dataclasses import dataclass

from django.conf import settings

from lake.models import FROM_PREFIX, PROVENANCE_TAG, QA_MARKER_TAG, SEDIMENT_TAG
from lake.search.execute import Candidate
from lake.search.follow import FollowUp

PROVENANCE_FACTOR = 0.85
QA_MARKER_FACTOR = 0.92
CONTAINER_SHARE = 0.5  # of a matching provenance row's score, inherited by its constituents (`inherited_scores`)


@dataclass(frozen=True)
class Tuning:
    """The settings that shape a ranking (read once per search; tests pass their own)."""

    vector_weight: float
    text_weight: float
    vector_max_distance: float
    text_min_rank: float
    provenance_share: float
    rrf_k: int = 60
    fusion: str = "weighted"

    @classmethod
    def from_settings(cls, *, embedder_floor: float = 1.0) -> "Tuning":
        """The settings; the vector floor is `embedder_floor` (the embedder's own) unless set."""
        floor = settings.SEARCH_VECTOR_MAX_DISTANCE
        return cls(vector_weight=settings.SEARCH_VECTOR_WEIGHT, text_weight=settings.SEARCH_TEXT_WEIGHT,
                   rrf_k=settings.SEARCH_RRF_K, vector_max_distance=embedder_floor if floor is None else floor,
                   text_min_rank=settings.SEARCH_TEXT_MIN_RANK, provenance_share=settings.SEARCH_PROVENANCE_SHARE,
                   fusion=settings.SEARCH_FUSION)


@dataclass
class Ranked:
    candidate: Candidate
    rerank_factor: float
    reranked_distance: float | None
    vector_position: int | None  # best (1-based) position in a vector ranking of any step
    text_position: int | None
    fused: float  # the fusion's score (SEARCH_FUSION): higher is better
    inherited: float = 0.0  # the part of `fused` inherited from a provenance row that contains it
    followed: float = 0.0  # the part of `fused` given by the follow-up step (`lake.search.follow`)

    @property
    def found_by(self) -> list[str]:
        found = []
        if self.vector_position is not None:
            found.append("centroid" if self.candidate.matched_on == "centroid" else "vector")
        if self.text_position is not None:
            found.append("text")
        if self.inherited:
            found.append("container")
        if self.followed:
            found.append("follow-up")
        return found


def rerank_factor(tags) -> float:
    if QA_MARKER_TAG in tags:
        return QA_MARKER_FACTOR
    if PROVENANCE_TAG in tags or SEDIMENT_TAG in tags:
        return PROVENANCE_FACTOR
    return 1.0


def fuse(candidates: list[Candidate], steps: int, *, tuning: Tuning, words: dict[int, int],
         follow: FollowUp | None = None) -> list[Ranked]:
    """The candidates that placed in some half (above its floor), or that a provenance row among
    them contains, or that the follow-up step `follow` found, best first, each with the numbers
    that placed it. `words` holds, per step, how many query words its text half looked for."""
    factors = {c.id: rerank_factor(c.tags) for c in candidates}
    fused = {c.id: 0.0 for c in candidates}
    vector_positions: dict[str, int] = {}
    text_positions: dict[str, int] = {}
    for step in range(steps):
        by_vector = sorted((c for c in candidates if step in c.step_distances
                            and c.step_distances[step] <= tuning.vector_max_distance),
                           key=lambda c: (c.step_distances[step] * factors[c.id], c.id))
        by_text = sorted((c for c in candidates if step in c.step_text_ranks
                          and c.step_text_ranks[step] >= tuning.text_min_rank),
                         key=lambda c: (-c.step_text_ranks[step] / factors[c.id], c.id))
        for positions, ranking, weight, found_in in ((vector_positions, by_vector, tuning.vector_weight, "vector_steps"),
                                                     (text_positions, by_text, tuning.text_weight, "text_steps")):
            if tuning.fusion == "rrf":
                ranking = [c for c in ranking if step in getattr(c, found_in)]  # each half's own candidates
            for position, candidate in enumerate(ranking, start=1):
                positions[candidate.id] = min(positions.get(candidate.id, position), position)
                if tuning.fusion == "rrf":
                    # A ranking with no weight still places its candidates, behind every weighted one.
                    fused[candidate.id] += weight / (tuning.rrf_k + position) if weight else 1e-9 / position
        if tuning.fusion == "weighted":
            vector_weight = leaning_vector_weight(tuning, text_confidence(by_text, step, words.get(step, 0)))
            floor = max(tuning.vector_max_distance, 1e-6)
            for candidate in by_vector:
                # Similarity above chance: 0 at the floor, 1 at distance 0 (plain 1 - distance with no floor).
                similarity = max(0.0, (floor - candidate.step_distances[step] * factors[candidate.id]) / floor)
                fused[candidate.id] += vector_weight * similarity or 1e-9
            for candidate in by_text:
                coverage = candidate.step_text_ranks[step] / factors[candidate.id] / (words.get(step, 0) + 1)
                fused[candidate.id] += tuning.text_weight * coverage or 1e-9
    inherited = inherited_scores(candidates, fused)
    followed = followed_scores(candidates, {c.id: fused[c.id] + inherited.get(c.id, 0.0) for c in candidates}, follow)
    ranked = []
    for candidate in candidates:
        score = fused[candidate.id] + inherited.get(candidate.id, 0.0) + followed.get(candidate.id, 0.0)
        if not score:
            continue  # in no ranking: below the floor of every half
        distance = candidate.distance
        factor = factors[candidate.id]
        ranked.append(Ranked(
            candidate=candidate, rerank_factor=factor,
            reranked_distance=None if distance is None else distance * factor,
            vector_position=vector_positions.get(candidate.id), text_position=text_positions.get(candidate.id),
            fused=score, inherited=inherited.get(candidate.id, 0.0), followed=followed.get(candidate.id, 0.0),
        ))
    ranked.sort(key=lambda r: (-r.fused, r.reranked_distance if r.reranked_distance is not None
                               and r.reranked_distance <= tuning.vector_max_distance else 9e9,
                               -r.candidate.created_at.timestamp(), r.candidate.id))
    return ranked


def without_repeats(ranked: list[Ranked]) -> tuple[list[Ranked], int]:
    """`ranked` without the moments whose text (and media) repeats a better-ranked moment's word for
    word, and how many were left out. The same line said on many days ("Did you watch the match
    last night?") tells a reader nothing the first one did not, and seven of them took seven of ten
    hits from the turn that answered. Named stretches (provenance, sediment) all stay: two with one
    summary still hold different moments."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for item in ranked:
        candidate = item.candidate
        if PROVENANCE_TAG not in candidate.tags and SEDIMENT_TAG not in candidate.tags:
            text = (" ".join(candidate.content.split()).casefold(), candidate.media_hash)
            if text in seen:
                continue
            seen.add(text)
        kept.append(item)
    return kept, len(ranked) - len(kept)


def inherited_scores(candidates: list[Candidate], fused: dict[str, float],
                     share: float = CONTAINER_SHARE) -> dict[str, float]:
    """What each candidate inherits from the provenance (or sediment) rows among the candidates
    that contain it (its `from:` ids): `share` of the best such row's own fused score, but never
    past that row (the summary first, then its moments). A summary that matches says its moments
    belong to the answer, so the moments of the stretch asked about rank above moments elsewhere
    that share a word with the question."""
    present = {candidate.id for candidate in candidates}
    inherited: dict[str, float] = {}
    for candidate in candidates:
        score = fused[candidate.id]
        if not score or not (PROVENANCE_TAG in candidate.tags or SEDIMENT_TAG in candidate.tags):
            continue
        for tag in candidate.tags:
            child = tag.removeprefix(FROM_PREFIX)
            if tag.startswith(FROM_PREFIX) and child in present:
                gain = min(share * score, score * (1 - 1e-9) - fused[child])
                if gain > inherited.get(child, 0.0):
                    inherited[child] = gain
    return inherited


def followed_scores(candidates: list[Candidate], scores: dict[str, float], follow: FollowUp | None,
                    share: float = CONTAINER_SHARE) -> dict[str, float]:
    """What the follow-up step gives each delta it found: `share` of an anchor's score times the
    share of that anchor's followed words the delta holds (the best over the anchors), never past
    the anchor (as a constituent gets from its container: a delta that names what a best hit
    names belongs with it)."""
    if follow is None:
        return {}
    followed: dict[str, float] = {}
    for candidate in candidates:
        for anchor_id, held in candidate.follow_shares.items():
            anchor = scores.get(anchor_id, 0.0)
            if anchor_id not in follow.anchor_ids or not anchor:
                continue
            gain = min(share * anchor * held, anchor * (1 - 1e-9) - scores[candidate.id])
            if gain > followed.get(candidate.id, 0.0):
                followed[candidate.id] = gain
    return followed


def text_confidence(by_text: list[Candidate], step: int, words: int) -> float:
    """How sure the text half of a step is, in [0, 1]: the share of the query's words (those it
    looked for: rare enough, not stopwords) that its best match holds. 0 when nothing matched."""
    if not words or not by_text:
        return 0.0
    return min(1.0, max(math.floor(c.step_text_ranks[step]) for c in by_text) / words)


def leaning_vector_weight(tuning: Tuning, confidence: float) -> float:
    """The vector half's weight for a step whose text half is `confidence` sure: the configured
    weight when the best text match holds every query word, rising with the square of the share
    it misses to the text half's own weight when it holds none (a paraphrase, a query whose words
    the lake does not use): then the vector ranking, which matches meaning, decides. The square
    leaves a match that misses one word of four most of its say (rising linearly, the benchmark's
    two-turn "which came first" questions lost a turn to its vector neighbours)."""
    if tuning.vector_weight >= tuning.text_weight:
        return tuning.vector_weight
    return tuning.vector_weight + (1.0 - confidence) ** 2 * (tuning.text_weight - tuning.vector_weight)


def provenance_cap(*, hits: int, share: float, moments: bool = True) -> int:
    """How many of `hits` hits may be provenance rows: share x hits, rounded down; one when no
    moment matched at all (a search for one named stretch still finds it)."""
    if share >= 1:
        return hits
    if not moments:
        return min(hits, 1) if share > 0 else 0
    return math.floor(share * hits + 1e-9)


def top_hits(ranked: list[Ranked], *, limit: int, share: float) -> tuple[list[Ranked], int]:
    """The best `limit` of `ranked` with at most `provenance_cap` provenance rows among them, and
    how many provenance rows the cap passed over. The cap is a share of the hits returned, not of
    `limit`: when few moments pass the floor, fewer provenance rows come with them."""
    quota = ProvenanceQuota.of(limit=limit, share=share)
    hits: list[Ranked] = []
    for item in ranked:
        if len(hits) == limit:
            break
        if quota.admits(item):
            hits.append(item)
    provenance, passed_over = quota.admitted, quota.passed_over
    while provenance > provenance_cap(hits=len(hits), share=share, moments=len(hits) > provenance):
        # Fewer moments than `limit` passed the floor: drop the lowest-ranked provenance row.
        hits.pop(max(index for index, item in enumerate(hits) if is_provenance(item)))
        provenance -= 1
        passed_over += 1
    return hits, passed_over


@dataclass
class ProvenanceQuota:
    """The provenance cap of a search's `limit` hits as they are chosen: `admits` says whether a
    hit may join them, counting the provenance rows let in and those passed over."""

    cap: int
    admitted: int = 0
    passed_over: int = 0

    @classmethod
    def of(cls, *, limit: int, share: float, admitted: int = 0) -> "ProvenanceQuota":
        """The quota of `limit` hits (at least one provenance row unless `share` is 0), `admitted`
        of them already taken."""
        return cls(cap=max(1, provenance_cap(hits=limit, share=share)) if share > 0 else 0, admitted=admitted)

    def admits(self, item: Ranked) -> bool:
        if not is_provenance(item):
            return True
        if self.admitted >= self.cap:
            self.passed_over += 1
            return False
        self.admitted += 1
        return True


def is_provenance(item: Ranked) -> bool:
    return PROVENANCE_TAG in item.candidate.tags
