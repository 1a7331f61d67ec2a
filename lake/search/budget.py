"""The answer's budget: a search packs the best of what it surfaced into a number of characters of
rendered recall (what a model reads; about 4 characters a token), and says what it left out.

Priority: every hit before any context (by rank, the sources' before the agent's own output), then each hit's context in the hits' order (a
provenance hit's constituents, a moment's neighbours on its strip), then the containers (nearest
first). A row that does not fit is left out and smaller ones after it may still fit; context whose
hit was left out goes too. The rendered text ends with one line naming the hits left out, so a
model can open them (`expand`, or a search with a bigger budget)."""

from collections.abc import Callable
from dataclasses import dataclass, field

from lake.models import is_agent_output

ROLES = ("hit", "child", "neighbour", "container")
# Room kept for the closing line that names what was left out.
LEFT_OUT_LINE_ROOM = 160


@dataclass
class Packing:
    budget: int
    kept: list = field(default_factory=list)  # rows, in their original order
    left_out: list = field(default_factory=list)  # rows, in priority order
    rendered: str = ""

    def as_dict(self) -> dict:
        counts = {role: sum(1 for row in self.left_out if row.role == role) for role in ROLES}
        return {"characters": self.budget, "used": len(self.rendered), "rows_kept": len(self.kept),
                "left_out": {role: count for role, count in counts.items() if count},
                "left_out_hits": [row.id for row in self.left_out if row.role == "hit"]}


def pack(rows: list, *, budget: int, line_cost: Callable[[object], int], render: Callable[[list, str], str]) -> Packing:
    """Keep the rows that fit `budget` characters, best first. `line_cost(row)` estimates a row's
    share of the text; `render(rows, closing_line)` renders the kept rows (checked against the
    budget, dropping the last kept rows while it does not fit)."""
    packing = Packing(budget=budget)
    frame = len(render([], ""))
    room = budget - frame - LEFT_OUT_LINE_ROOM
    kept_ids: set[str] = set()
    order = _priority(rows)
    for row in order:
        cost = line_cost(row) + 1  # its newline
        anchor_kept = row.anchor_id is None or row.anchor_id in kept_ids
        if anchor_kept and cost <= room:
            kept_ids.add(row.id)
            room -= cost
    kept_in_priority = [row for row in order if row.id in kept_ids]
    while True:
        packing.kept = [row for row in rows if row.id in kept_ids]
        packing.left_out = [row for row in order if row.id not in kept_ids]
        packing.rendered = render(packing.kept, _left_out_line(packing.left_out))
        if len(packing.rendered) <= budget or not kept_in_priority:
            return packing
        dropped = kept_in_priority.pop()  # the estimate fell short: give up the least important row
        kept_ids.discard(dropped.id)
        kept_ids -= {row.id for row in rows if row.anchor_id == dropped.id}


def _priority(rows: list) -> list:
    # The sources' hits before the agent's own (lake.search.own_output): an echo never costs a source its room.
    hits = sorted((row for row in rows if row.role == "hit"),
                  key=lambda row: (is_agent_output(source=row.source, tags=row.tags), row.rank or 0))
    rank_of = {row.id: row.rank or 0 for row in hits}
    context = sorted((row for row in rows if row.role in ("child", "neighbour")),
                     key=lambda row: (rank_of.get(row.anchor_id, 1 << 30), row.role != "child"))
    containers = sorted((row for row in rows if row.role == "container"), key=lambda row: (row.depth or 0, row.id))
    return hits + context + containers


def _left_out_line(left_out: list) -> str:
    if not left_out:
        return ""
    hits = [row.id for row in left_out if row.role == "hit"]
    others = len(left_out) - len(hits)
    parts = []
    if hits:
        shown = ", ".join(f"[{delta_id}]" for delta_id in hits[:5])
        parts.append(f"{len(hits)} hit{'s' * (len(hits) != 1)} ({shown}{', ...' if len(hits) > 5 else ''})")
    if others:
        parts.append(f"{others} row{'s' * (others != 1)} of context")
    return f"left out for the budget: {' and '.join(parts)}"[:LEFT_OUT_LINE_ROOM - 1]
