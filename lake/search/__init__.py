"""Search of the lake, seed 000's retrieval stack made hybrid:

1. plan (`plan.py`): 1 to 4 steps; the planner model composes them, or one hybrid step by default;
2. execution (`execute.py`): per step, vector (summary and centroid) and full-text candidates;
   for a one-step plan in hybrid or text mode, the follow-up step on the best source moments'
   rarest words (`follow.py`);
3. timeline strips and 4. provenance expansion down and up (`expand.py`);
5. valence rerank, fusion of the vector and text scores (weighted, or reciprocal rank fusion), the
   share a constituent inherits from a matching provenance row and a follow-up row from its
   anchor, the relevance floor, a moment repeating a better one word for word left out and the
   provenance cap (`rank.py`), the sources before the agent's own output (`own_output.py`);
6. provenance rows match on LEAST(summary distance, centroid distance), the centroid only where it
   is meaningfully closer, both reported;
7. rendering (`render.py`): containers-active block, hits with `[<id>]` slugs, strips, packed into
   the answer's character budget (`budget.py`).

`deltas_search` returns the rendered text and the structured rows; every row says how it got
there (`role`, `found_by`) and carries its numbers (`scores`). A query of small words only, or one
nothing matches above the relevance floor, returns no hits and says why (`nothing_found`)."""

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from fathom.errors import ApplicationError
from fathom.models import Workspace
from fathom.tracing import span
from lake.embedders import EmbeddingFailed, EmbeddingUnavailable, get_embedder
from lake.models import level_of
from lake.search.budget import Packing, pack
from lake.search.execute import Candidate, prepare, run_step
from lake.search.expand import surroundings
from lake.search.floor import NO_FLOOR, vector_floor
from lake.search.follow import anchors_of, follow_up
from lake.search.own_output import own_containers_folded, sources_first
from lake.search.plan import (
    MAX_STEPS,
    MODES,
    Filters,
    Plan,
    Step,
    default_plan,
    planner_plan,
    with_filters,
    with_mode,
)
from lake.search.rank import Ranked, Tuning, fuse, rerank_factor, without_repeats
from lake.search.render import is_named_stretch, render, row_cost
from lake.words import content_words

__all__ = ["DEPTHS", "MODES", "Filters", "Plan", "SearchResult", "SearchRow", "Step", "deltas_search"]

logger = logging.getLogger(__name__)

MAX_LIMIT = 100
MIN_BUDGET = 200  # characters: the header line and one short hit
MAX_BUDGET = 1_000_000
ONLY_SMALL_WORDS = "the query has only small words (stopwords such as 'what', 'the', 'and'); name what to look for"
BELOW_FLOOR = ("nothing in this lake matches the query closely enough (below the relevance floor of "
               "every ranking this search used)")
NO_MATCH = "nothing in this lake matches the query"


@dataclass(frozen=True)
class Depth:
    strip_width: int  # neighbours on each side of a moment hit
    expand: bool  # provenance expansion down and up
    pool_factor: int  # candidates per ranking = max(limit x factor, min_pool)
    min_pool: int


DEPTHS = {
    "shallow": Depth(strip_width=0, expand=False, pool_factor=2, min_pool=20),
    "normal": Depth(strip_width=2, expand=True, pool_factor=3, min_pool=30),
    "deep": Depth(strip_width=4, expand=True, pool_factor=5, min_pool=60),
}
ROLE_ORDER = {"hit": 0, "child": 1, "neighbour": 2, "container": 3}


@dataclass
class SearchRow:
    id: str
    created_at: datetime
    source: str
    tags: list[str]
    content: str
    media_hash: str
    role: str  # hit | child (of a provenance hit) | neighbour (on a hit's strip) | container (holds surfaced deltas)
    scores: dict
    rank: int | None = None  # hits: 1 is best
    anchor_id: str | None = None  # child / neighbour: the hit it hangs from
    contains: list[str] = field(default_factory=list)  # container: the surfaced deltas or containers it holds
    depth: int | None = None  # container: hops above a surfaced delta
    alike: list[str] = field(default_factory=list)  # container: the agent's own containers of its title it stands for

    @property
    def level(self) -> int | None:
        return level_of(self.tags)

    def as_dict(self) -> dict:
        return {
            "id": self.id, "role": self.role, "rank": self.rank, "anchor_id": self.anchor_id,
            "contains": self.contains, "depth": self.depth, "alike": self.alike, "level": self.level,
            "created_at": self.created_at.isoformat(), "source": self.source, "tags": self.tags,
            "content": self.content, "media_hash": self.media_hash, "scores": self.scores,
        }


@dataclass
class SearchResult:
    query: str
    depth: str
    plan: Plan
    rows: list[SearchRow]
    rendered: str
    warnings: list[str] = field(default_factory=list)
    mode: str = "hybrid"
    nothing_found: str = ""  # why there are no hits (small words only, below the floor); "" when there are
    budget: Packing | None = None

    @property
    def hits(self) -> list[SearchRow]:
        return [row for row in self.rows if row.role == "hit"]

    def as_dict(self) -> dict:
        return {"query": self.query, "mode": self.mode, "depth": self.depth, "plan": self.plan.as_dict(),
                "warnings": self.warnings, "nothing_found": self.nothing_found or None,
                "budget": self.budget.as_dict() if self.budget else None, "rendered": self.rendered,
                "rows": [row.as_dict() for row in self.rows]}


def deltas_search(*, workspace: Workspace, query: str, depth: str = "normal", filters: Filters | Mapping | None = None,
                  limit: int = 10, plan: Plan | None = None, mode: str = "hybrid",
                  budget: int | None = None) -> SearchResult:
    """Recall from this workspace's lake: the best `limit` hits for `query`, with their timeline
    strips, the constituents of provenance hits and the provenance containing what surfaced,
    packed into `budget` characters of rendered text (SEARCH_BUDGET_CHARS when None; what did
    not fit is listed in `budget`). `mode` is `hybrid` (vector and full text fused), `vector` or
    `text`: anything but hybrid applies to every step of the plan. `filters` (tags, kind, source,
    since, until) narrow every step's hits; `plan` overrides the planner.

    No hits, and `nothing_found` says why, for a query of stopwords only (no query is run) and for
    one that nothing matches above the relevance floor. Costs a constant number of queries
    whatever the size of the result: one per step plus two (the scan settings with the planner
    check; strips and expansion together), plus the follow-up step's one for a one-step plan in
    hybrid or text mode that found a source moment."""
    query = " ".join(str(query).split())
    if not query:
        raise ApplicationError("a search needs a query", details={"field": "query"})
    if depth not in DEPTHS:
        raise ApplicationError(f"depth must be one of {', '.join(DEPTHS)}, not {depth!r}", details={"field": "depth"})
    if mode not in MODES:
        raise ApplicationError(f"mode must be one of {', '.join(MODES)}, not {mode!r}", details={"field": "mode"})
    if not 1 <= limit <= MAX_LIMIT:
        raise ApplicationError(f"limit must be between 1 and {MAX_LIMIT}", details={"field": "limit"})
    budget = settings.SEARCH_BUDGET_CHARS if budget is None else budget
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise ApplicationError(f"budget must be between {MIN_BUDGET} and {MAX_BUDGET:,} characters",
                               details={"field": "budget"})
    if isinstance(filters, Mapping):
        filters = Filters(**{key: tuple(value) if key == "tags" else value for key, value in filters.items()})
    config = DEPTHS[depth]
    if not content_words(query) and plan is None:
        return _nothing_found(query=query, depth=depth, mode=mode, plan=default_plan(query), budget=budget,
                              reason=ONLY_SMALL_WORDS, warnings=[])
    pool = max(limit * config.pool_factor, config.min_pool)
    planner = prepare(workspace_id=workspace.pk, ef_search=max(settings.FATHOM_HNSW_EF_SEARCH, pool))
    plan = with_filters(plan or plan_for(workspace=workspace, query=query, planner=planner), filters or Filters())
    if not 1 <= len(plan.steps) <= MAX_STEPS:
        raise ApplicationError(f"a plan has 1 to {MAX_STEPS} steps, not {len(plan.steps)}")
    plan = with_mode(plan, mode) if mode != "hybrid" else plan
    warnings: list[str] = [plan.note] if plan.note else []

    vectors = _query_vectors(plan, warnings)
    candidates: dict[str, Candidate] = {}
    words = {index: run_step(workspace_id=workspace.pk, index=index, step=step, query_vector=vectors.get(step.query),
                             pool=pool, candidates=candidates)
             for index, step in enumerate(plan.steps)}
    tuning = Tuning.from_settings(embedder_floor=vector_floor(get_embedder()) if vectors else NO_FLOOR)
    ranked = fuse(list(candidates.values()), len(plan.steps), tuning=tuning, words=words)
    if len(plan.steps) == 1 and plan.steps[0].mode in ("hybrid", "text"):  # the follow-up step (follow.py)
        follow = follow_up(workspace_id=workspace.pk, anchors=anchors_of(ranked), step=plan.steps[0],
                           query_vector=vectors.get(plan.steps[0].query), pool=pool, candidates=candidates)
        if follow is not None:
            ranked = fuse(list(candidates.values()), 1, tuning=tuning, words=words, follow=follow)
    ranked, repeats = without_repeats(ranked)
    hits, capped = sources_first(ranked, limit=limit, share=tuning.provenance_share)
    if not hits:
        reason = BELOW_FLOOR if candidates else _no_match(plan)
        return _nothing_found(query=query, depth=depth, mode=mode, plan=plan, budget=budget, reason=reason,
                              warnings=warnings)
    if repeats:
        warnings.append(f"{repeats} more matching moment{'s repeat' if repeats != 1 else ' repeats'} a better one's "
                        "text word for word; each text is shown once")
    if capped:
        warnings.append(f"{capped} more provenance row{'s' * (capped != 1)} matched; provenance takes at most "
                        f"{tuning.provenance_share:.0%} of the hits (FATHOM_SEARCH_PROVENANCE_SHARE)")
    main_vector = vectors.get(plan.steps[0].query)

    # Stages 3 and 4: strips around moment hits; down (ids from the hits' own tags) and up.
    moment_hits = [hit.candidate for hit in hits if not is_named_stretch(hit.candidate)]
    children_of = {}
    if config.expand:
        children_of = {hit.candidate.id: _from_ids(hit.candidate.tags) for hit in hits
                       if "kind:provenance" in hit.candidate.tags or "kind:sediment" in hit.candidate.tags}
    child_ids = list(dict.fromkeys(child for children in children_of.values() for child in children))
    around = surroundings(workspace_id=workspace.pk, anchors=[(c.id, c.created_at) for c in moment_hits],
                          width=config.strip_width, expand=config.expand, hit_ids=[hit.candidate.id for hit in hits],
                          child_ids=child_ids, known_ids=list(candidates), query_vector=main_vector)
    strip_rows, lineage = around.strips, around.lineage
    known = ({c.id: c for c in candidates.values()} | {row.id: row for rows in strip_rows.values() for row in rows}
             | around.rows)

    rows = own_containers_folded(_rows(hits, strip_rows, children_of, lineage, known))
    strip_of = {anchor: [row.id for row in rows_] for anchor, rows_ in strip_rows.items()}

    def render_rows(kept: list[SearchRow], closing: str) -> str:
        return render(query=query, depth=depth, plan_source=plan.source, steps=len(plan.steps), rows=kept,
                      strip_of=strip_of, children_of=children_of, warnings=warnings, mode=mode, closing=closing,
                      found=len(hits))

    packed = pack(rows, budget=budget, line_cost=row_cost, render=render_rows)
    return SearchResult(query=query, depth=depth, plan=plan, rows=packed.kept, rendered=packed.rendered,
                        warnings=warnings, mode=mode, budget=packed)


def plan_for(*, workspace: Workspace, query: str, planner: bool) -> Plan:
    """The plan for a query: the planner model's when the `planner` role has a model of its own
    (`planner`, see `execute.prepare`), else the default plan. The planner's call and any fallback
    (with its reason) are traced as `lake.plan`."""
    if not planner:
        return default_plan(query)
    with span("lake.plan", workspace=workspace, actor_id="lake:search-planner", query=query) as traced:
        plan = planner_plan(workspace=workspace, query=query, now=timezone.now())
        traced.set(source=plan.source, steps=[step.as_dict() for step in plan.steps], note=plan.note)
    if plan.note:
        logger.warning("search plan fallback in workspace %s: %s", workspace.pk, plan.note)
    return plan


# --- helpers ---------------------------------------------------------------------------------------


def _nothing_found(*, query: str, depth: str, mode: str, plan: Plan, budget: int, reason: str,
                   warnings: list[str]) -> SearchResult:
    rendered = render(query=query, depth=depth, plan_source=plan.source, steps=len(plan.steps), rows=[],
                      strip_of={}, children_of={}, warnings=warnings, mode=mode, nothing_found=reason)
    return SearchResult(query=query, depth=depth, plan=plan, rows=[], rendered=rendered, warnings=warnings,
                        mode=mode, nothing_found=reason, budget=Packing(budget=budget, rendered=rendered))


def _no_match(plan: Plan) -> str:
    """Why no candidate came at all: the filters of a step let nothing through, or nothing matched."""
    filters = next(filter(None, (step.as_dict()["filters"] for step in plan.steps)), None)
    if not filters:
        return NO_MATCH
    described = ", ".join(f"{key} {', '.join(value) if isinstance(value, list | tuple) else value}"
                          for key, value in filters.items())
    return f"{NO_MATCH} within the filters ({described})"


def _query_vectors(plan: Plan, warnings: list[str]) -> dict[str, str | None]:
    """The embedding of each step's query, as pgvector text; with the embedder down, the search
    runs on full text alone and says so."""
    texts = list(dict.fromkeys(step.query for step in plan.steps if step.mode in ("hybrid", "vector")))
    if not texts:
        return {}
    try:
        vectors = get_embedder().embed(texts)
    except (EmbeddingUnavailable, EmbeddingFailed) as exc:
        warnings.append(f"vector search unavailable ({exc}); these results come from full text only")
        return {}
    return {text: "[" + ",".join(repr(float(v)) for v in vector) + "]" for text, vector in zip(texts, vectors, strict=True)}


def _from_ids(tags) -> list[str]:
    return [tag.removeprefix("from:") for tag in tags if tag.startswith("from:")]


def _rows(hits: list[Ranked], strip_rows, children_of, lineage, known) -> list[SearchRow]:
    """Every surfaced delta once, with its best role: hit, then child, neighbour, container."""
    rows: dict[str, SearchRow] = {}

    def add(candidate: Candidate, role: str, scores: dict, **extra) -> None:
        current = rows.get(candidate.id)
        if current is None or ROLE_ORDER[role] < ROLE_ORDER[current.role]:
            rows[candidate.id] = SearchRow(
                id=candidate.id, created_at=candidate.created_at, source=candidate.source, tags=candidate.tags,
                content=candidate.content, media_hash=candidate.media_hash, role=role, scores=scores, **extra)

    for rank, hit in enumerate(hits, start=1):
        add(hit.candidate, "hit", _hit_scores(hit), rank=rank)
    for anchor, children in children_of.items():
        for child in children:
            if child in known:
                add(known[child], "child", _plain_scores(known[child], "expand-down"), anchor_id=anchor)
    for anchor, neighbours in strip_rows.items():
        for neighbour in neighbours:
            add(neighbour, "neighbour", _plain_scores(neighbour, "strip"), anchor_id=anchor)
    contains: dict[str, list[str]] = {}
    depth: dict[str, int] = {}
    for parent_id, child_id, hops in lineage:
        contains.setdefault(parent_id, []).append(child_id)
        depth[parent_id] = min(depth.get(parent_id, hops), hops)
    for parent_id, children in contains.items():
        if parent_id in known:
            add(known[parent_id], "container", _plain_scores(known[parent_id], "expand-up"), contains=children,
                depth=depth[parent_id])
    ordered = sorted(rows.values(), key=lambda row: (ROLE_ORDER[row.role], row.rank or 0, row.created_at, row.id))
    return ordered


def _hit_scores(hit: Ranked) -> dict:
    candidate = hit.candidate
    return {
        "found_by": hit.found_by, "summary_distance": _round(candidate.summary_distance),
        "centroid_distance": _round(candidate.centroid_distance), "distance": _round(candidate.distance),
        "matched_on": candidate.matched_on, "text_rank": _round(candidate.text_rank),
        "vector_position": hit.vector_position, "text_position": hit.text_position, "fused": _round(hit.fused),
        "rerank_factor": hit.rerank_factor, "reranked_distance": _round(hit.reranked_distance),
    }


def _plain_scores(candidate: Candidate, found_by: str) -> dict:
    factor = rerank_factor(candidate.tags)
    distance = candidate.distance
    return {
        "found_by": [found_by], "summary_distance": _round(candidate.summary_distance),
        "centroid_distance": _round(candidate.centroid_distance), "distance": _round(distance),
        "matched_on": candidate.matched_on, "text_rank": None, "vector_position": None, "text_position": None,
        "fused": None, "rerank_factor": factor, "reranked_distance": _round(None if distance is None else distance * factor),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)
