"""The agent's own output ranked as what it is: an echo of the sources, not a source.

A question asked five times leaves five Q/A markers, five cards and their insights, and the marker
dedup adds its fold, proposal and decision; each repeats the question's words, so each matches it
better than the notes it came from. Left to the fusion they fill the top of the results and the
answer's budget, and the notes are dropped. So the fused ranking is split in two:

- the sources (every delta that is not the agent's output, `lake.models.is_agent_output`) take the
  hits in their order, with the provenance cap (`rank.top_hits`);
- the agent's own rows come back in their order, each at its own place in the fused ranking but
  never closer than OWN_OUTPUT_EVERY hits to the one before: at most one in any OWN_OUTPUT_EVERY
  consecutive hits (one in the top 5), even when that leaves fewer hits than asked for. They stay
  under the provenance cap too (a marker and a fold are provenance rows). When no source matched
  at all, the agent's own rows are all there is and rank as the fusion placed them.

The budget (`budget.pack`) keeps the sources' hits before the agent's.

The containers the surfaced deltas sit in are the agent's own too when they are its Q/A markers or
their folds: one question asked five times leaves five markers holding the same notes, and the
containers-active block listed the question five times. `own_containers_folded` keeps one line a
title: the newest such container, holding what all of them held, naming how many it stands for."""

from lake.models import is_agent_output
from lake.search.rank import ProvenanceQuota, Ranked, is_provenance, top_hits
from lake.search.render import title_of

OWN_OUTPUT_EVERY = 5


def sources_first(ranked: list[Ranked], *, limit: int, share: float,
                  every: int = OWN_OUTPUT_EVERY) -> tuple[list[Ranked], int]:
    """The best `limit` hits of `ranked` (best first) with the sources first as the module says, and
    how many provenance rows the cap passed over."""
    own_ids = {item.candidate.id for item in ranked if is_own(item)}
    sources, passed_over = top_hits([item for item in ranked if item.candidate.id not in own_ids],
                                    limit=limit, share=share)
    if not sources:  # no source matched: the agent's own output is all there is
        return top_hits(ranked, limit=limit, share=share)
    order = {item.candidate.id: index for index, item in enumerate(ranked)}
    hits = list(sources)
    quota = ProvenanceQuota.of(limit=limit, share=share, admitted=sum(1 for item in hits if is_provenance(item)))
    placed = -every  # the position of the last own row placed
    for item in (item for item in ranked if item.candidate.id in own_ids):
        natural = sum(1 for hit in hits if order[hit.candidate.id] < order[item.candidate.id])
        position = max(natural, placed + every)
        if position >= limit or position > len(hits):
            break
        if not quota.admits(item):
            continue
        hits.insert(position, item)
        placed = position
    return hits[:limit], passed_over + quota.passed_over


def is_own(item: Ranked) -> bool:
    return is_agent_output(source=item.candidate.source, tags=item.candidate.tags)


def own_containers_folded(rows: list) -> list:
    """`rows` (search rows, `lake.search.SearchRow`) with the agent's own containers that repeat a
    newer one's title left out: the newest of each title stays, holding what all of them held
    (`contains`, the nearest `depth`), the ids of the others in its `alike`."""
    newest: dict[str, object] = {}
    for row in sorted(rows, key=lambda row: (row.created_at, row.id), reverse=True):
        if row.role != "container" or not is_agent_output(source=row.source, tags=row.tags):
            continue
        title = " ".join(title_of(row.content).split()).casefold()
        kept = newest.setdefault(title, row)
        if kept is not row:
            kept.alike.append(row.id)
            kept.contains = list(dict.fromkeys(kept.contains + row.contains))
            kept.depth = min(kept.depth, row.depth)
    folded = {delta_id for row in newest.values() for delta_id in row.alike}
    return [row for row in rows if row.id not in folded]
