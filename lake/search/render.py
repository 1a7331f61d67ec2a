"""Stage 7: rendering a recall as text a model reads.

The containers-active block comes first: every provenance that the surfaced deltas sit in, so the
model sees the named stretches up front and extends or skips them instead of naming them again.
Then the hits, best first: a provenance (or Q/A marker) as `prov · [L<n> · <count> deltas · <id>]
<title>` with its summary and its constituents below it, a moment inside its timeline strip. Every
delta line carries its id in `[<id>]` form, so the model cites real ids; `▸` marks the hits."""

from collections.abc import Sequence

from lake.models import level_of

TIME_FORMAT = "%Y-%m-%d %H:%M"


def render(*, query: str, depth: str, plan_source: str, steps: int, rows: Sequence, strip_of: dict,
           children_of: dict, warnings: Sequence[str], mode: str = "hybrid", nothing_found: str = "",
           closing: str = "", found: int | None = None) -> str:
    """`rows` hold each delta once (with its best role); `strip_of` maps a moment hit to the ids of
    its strip, `children_of` a provenance hit to the ids of its constituents. `nothing_found` says
    why there are no hits; `found` is how many the search found (the hits in `rows` when None: the
    budget may have left some out), and `closing` a last line (what the budget left out)."""
    by_id = {row.id: row for row in rows}
    hits = [row for row in rows if row.role == "hit"]
    containers = [row for row in rows if row.role == "container"]
    found = len(hits) if found is None else found
    shown = f", {len(hits)} within the budget" if len(hits) < found else ""

    lines = [f'recall for "{query}" · {mode} · depth {depth} · plan {plan_source} ({steps} step{"s" * (steps != 1)}) · '
             f'{found} hit{"s" * (found != 1)}{shown}']
    lines += [f"note: {warning}" for warning in warnings]
    if containers:
        lines += ["", "containers active in this recall:"]
        for row in sorted(containers, key=lambda r: (-(r.level or 0), r.id)):
            lines.append(f"  {provenance_label(row)}{_alike(row)} — holds {_holds(row)}")
    if not hits:
        lines += ["", "no hit fits the budget (the last line names them)" if found
                  else f"nothing found: {nothing_found or 'no deltas matched.'}"]
        return "\n".join(lines + (["", closing] if closing else []))

    groups = _strip_groups([hit for hit in hits if not is_named_stretch(hit)], strip_of)
    group_of = {hit_id: group for group in groups for hit_id in group}
    rendered_groups: set[int] = set()
    for hit in hits:
        if is_named_stretch(hit):
            lines += ["", f"▸ {provenance_label(hit)}"]
            lines += [f"    {line}" for line in _summary(hit)]
            for child_id in children_of.get(hit.id, []):
                if child_id in by_id:
                    lines += _delta_lines(by_id[child_id], prefix="    ↳ ")
            continue
        group = group_of[hit.id]
        if id(group) in rendered_groups:
            continue  # on the strip of a better hit, marked there
        rendered_groups.add(id(group))
        strip = sorted((by_id[i] for i in group if i in by_id), key=lambda row: (row.created_at, row.id))
        lines += ["", f"── {strip[0].created_at.strftime(TIME_FORMAT)} → {strip[-1].created_at.strftime(TIME_FORMAT)} ──"]
        for row in strip:
            lines += _delta_lines(row, prefix="▸ " if row.role == "hit" else "  ")
    if closing:
        lines += ["", closing]
    return "\n".join(lines)


def row_cost(row) -> int:
    """About how many characters `row` adds to a recall (the budget's estimate)."""
    if row.role == "container":
        return len(provenance_label(row)) + len(_alike(row)) + 12 + len(_holds(row))
    if row.role == "hit" and is_named_stretch(row):
        return len(provenance_label(row)) + 3 + sum(len(line) + 5 for line in _summary(row))
    lines = _delta_lines(row, prefix="    ↳ " if row.role == "child" else "▸ ")
    strip_header = 40 if row.role == "hit" else 0  # a hit may open a strip: "── <time> → <time> ──"
    return sum(len(line) + 1 for line in lines) + strip_header


def _strip_groups(moment_hits, strip_of) -> list[set[str]]:
    """The hits' strips, with strips that share a delta merged into one."""
    groups: list[set[str]] = []
    for hit in moment_hits:
        members = {hit.id, *strip_of.get(hit.id, [])}
        overlapping = [group for group in groups if group & members]
        for group in overlapping:
            members |= group
            groups.remove(group)
        groups.append(members)
    return groups


def provenance_label(row) -> str:
    count = sum(1 for tag in row.tags if tag.startswith("from:"))
    level = level_of(row.tags)
    return f"prov · [L{level if level is not None else '?'} · {count} deltas · {row.id}] {title_of(row.content)}"


def is_named_stretch(row) -> bool:
    return "kind:provenance" in row.tags or "kind:qa-marker" in row.tags


def _delta_lines(row, *, prefix: str) -> list[str]:
    if is_named_stretch(row):
        return [f"{prefix}{provenance_label(row)}"]
    kinds = [tag.removeprefix("kind:") for tag in row.tags if tag.startswith("kind:")]
    head = f"{prefix}[{row.id}] {row.created_at.strftime(TIME_FORMAT)} · {row.source or '-'}"
    if kinds:
        head += f" · {','.join(kinds)}"
    text_lines = row.content.strip().splitlines() or [""]
    if row.media_hash:
        text_lines[-1] = f"{text_lines[-1]} [image {row.media_hash}]".strip()
    continuation = " " * len(prefix) + "    "
    return [f"{head} · {text_lines[0]}"] + [f"{continuation}{line}" for line in text_lines[1:]]


def _holds(row) -> str:
    return ", ".join(f"[{child}]" for child in row.contains)


def _alike(row) -> str:
    """A container standing for others of the agent's own with its title (`own_output.own_containers_folded`)."""
    return f" (and {len(row.alike)} more alike)" if row.alike else ""


def title_of(content: str) -> str:
    """A named stretch's title: the first line of its content."""
    return content.strip().split("\n", 1)[0].strip()


def _summary(row) -> list[str]:
    parts = row.content.strip().split("\n", 1)
    return parts[1].strip().splitlines() if len(parts) > 1 else []
