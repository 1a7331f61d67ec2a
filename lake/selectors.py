"""Reads of the lake: a delta by id or prefix, filtered lists, the provenance graph (children down,
containing provenance up), statistics, and search (see `lake.search`).

The harness's tools call these: `semantic` -> `deltas_search`, `expand` -> `provenance_children`,
`ascend` -> `provenance_parents`, and any id the model cites -> `delta_get`."""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from fathom.errors import ApplicationError, NotFoundError
from fathom.models import Workspace
from lake.embedders import embedder_name
from lake.models import (
    FROM_PREFIX,
    ID_LENGTH,
    KIND_PREFIX,
    LEVEL_PREFIX,
    MIN_PREFIX_LENGTH,
    PROVENANCE_TAG,
    Delta,
)
from lake.search import SearchResult, deltas_search  # noqa: F401  (re-exported: the search selector)
from lake.search.expand import ancestors

_HEX = re.compile(r"^[0-9a-f]+$")
MAX_ANCESTOR_LEVELS = 3


class AmbiguousIdError(ApplicationError):
    code = "ambiguous_id"


def delta_get(*, workspace: Workspace, id_or_prefix: str) -> Delta:
    """The delta of this workspace whose id is `id_or_prefix` or starts with it (8 or more hex
    characters). NotFoundError when none does; AmbiguousIdError, listing candidates, when several do."""
    wanted = normalize_id(id_or_prefix)
    if len(wanted) >= ID_LENGTH:
        delta = Delta.objects.filter(workspace=workspace, pk=wanted).first()
    else:
        matches = list(Delta.objects.filter(workspace=workspace, id__startswith=wanted).order_by("id")[:6])
        if len(matches) > 1:
            shown = [match.id for match in matches[:5]]
            raise AmbiguousIdError(
                f"the prefix {wanted!r} matches more than one delta ({', '.join(shown)}"
                f"{', ...' if len(matches) > 5 else ''}); give more characters",
                details={"prefix": wanted, "candidates": shown})
        delta = matches[0] if matches else None
    if delta is None:
        raise NotFoundError(f"no delta {wanted!r} in this workspace", details={"id": wanted})
    return delta


def deltas_resolve(*, workspace: Workspace, ids_or_prefixes: Sequence[str]) -> list[Delta]:
    """The deltas for these ids or unique prefixes, in the order given. Full ids cost one query in
    all; each prefix costs one more. Any unknown or ambiguous one raises (see `delta_get`)."""
    wanted = [normalize_id(value) for value in ids_or_prefixes]
    full = [value for value in wanted if len(value) >= ID_LENGTH]
    found = Delta.objects.filter(workspace=workspace, pk__in=full).in_bulk() if full else {}
    missing = [value for value in full if value not in found]
    if missing:
        raise NotFoundError(f"no delta {missing[0]!r} in this workspace", details={"ids": missing})
    for value in wanted:
        if value not in found:
            found[value] = delta_get(workspace=workspace, id_or_prefix=value)
    return [found[value] for value in wanted]


def normalize_id(value: str) -> str:
    """'[1A2B3C4D]' -> '1a2b3c4d': ids are cited in brackets and case does not matter."""
    cleaned = str(value).strip().strip("[]").strip().lower()
    if not _HEX.match(cleaned):
        raise ApplicationError(f"{value!r} is not a delta id (hex characters)", code="invalid_id",
                               details={"id": str(value)})
    if len(cleaned) < MIN_PREFIX_LENGTH:
        raise ApplicationError(f"give at least {MIN_PREFIX_LENGTH} characters of a delta id, not {len(cleaned)}",
                               code="invalid_id", details={"id": cleaned})
    return cleaned


def deltas_filter(queryset: QuerySet, *, tags: Sequence[str] = (), kind: str = "", source: str = "",
                  since: datetime | None = None, until: datetime | None = None) -> QuerySet:
    """Narrow deltas: all of `tags`, a kind (`kind:<kind>`), a source, created_at in [since, until)."""
    wanted = list(tags) + ([f"{KIND_PREFIX}{kind.removeprefix(KIND_PREFIX)}"] if kind else [])
    if wanted:
        queryset = queryset.filter(tags__contains=wanted)
    if source:
        queryset = queryset.filter(source=source)
    if since is not None:
        queryset = queryset.filter(created_at__gte=since)
    if until is not None:
        queryset = queryset.filter(created_at__lt=until)
    return queryset


def deltas_list(*, workspace: Workspace, tags: Sequence[str] = (), kind: str = "", source: str = "",
                since: datetime | None = None, until: datetime | None = None) -> QuerySet:
    """This workspace's deltas, newest first, without their vectors (the list never shows them)."""
    queryset = Delta.objects.filter(workspace=workspace).defer("embedding", "provenance_embedding", "search_vector")
    return deltas_filter(queryset, tags=tags, kind=kind, source=source, since=since, until=until)


def provenance_children(*, workspace: Workspace, delta: Delta) -> list[Delta]:
    """The constituents a provenance (or sediment) points at with `from:` tags, oldest first."""
    ids = delta.from_ids
    if not ids:
        return []
    return list(Delta.objects.filter(workspace=workspace, pk__in=ids)
                .defer("embedding", "provenance_embedding", "search_vector").order_by("created_at", "id"))


@dataclass(frozen=True)
class Ancestor:
    delta: Delta
    child_id: str  # the delta it contains on the way up
    depth: int  # 1 = directly contains one of the starting deltas


def provenance_same(*, workspace: Workspace, child_ids: Sequence[str], level: int) -> Delta | None:
    """The provenance of `level` over exactly `child_ids` (full ids), if the lake holds one: the same
    material named twice is the same provenance (one query, on the tags' GIN index)."""
    wanted = set(child_ids)
    candidates = Delta.objects.filter(workspace=workspace, tags__contains=[
        PROVENANCE_TAG, f"{LEVEL_PREFIX}{level}", *(f"{FROM_PREFIX}{child}" for child in wanted)])
    return next((delta for delta in candidates.order_by("created_at", "id")[:20] if set(delta.from_ids) == wanted),
                None)


def provenance_parents(*, workspace: Workspace, delta_ids: Sequence[str],
                       max_levels: int = MAX_ANCESTOR_LEVELS) -> list[Ancestor]:
    """The provenance containing these deltas, and the provenance containing that, up to
    `max_levels` hops (base -> L1 episode -> L2 topic -> L3 era), in one query. The child ->
    parent index is the GIN index over `tags` (`from:<id>`), so it is right in every process."""
    if not delta_ids:
        return []
    rows = ancestors(workspace_id=workspace.pk, delta_ids=list(delta_ids), max_levels=max_levels)
    by_id = Delta.objects.filter(pk__in={row[0] for row in rows}).defer(
        "embedding", "provenance_embedding", "search_vector").in_bulk()
    return [Ancestor(delta=by_id[parent_id], child_id=child_id, depth=depth) for parent_id, child_id, depth in rows]


def lake_stats(*, workspace: Workspace) -> dict:
    """Counts for an operator: deltas, embedded and waiting, provenance per level, kinds, sources,
    the time span, and the embedder in use. Four queries whatever the size of the lake."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*), count(embedding), count(*) FILTER (WHERE tags @> ARRAY[%s]::varchar[]),
                   count(provenance_embedding), min(created_at), max(created_at)
            FROM lake_delta WHERE workspace_id = %s
            """,
            [PROVENANCE_TAG, workspace.pk],
        )
        total, embedded, provenance, centroids, oldest, newest = cursor.fetchone()
        cursor.execute(
            """
            SELECT tag, count(*) FROM lake_delta CROSS JOIN LATERAL unnest(tags) AS tag
            WHERE workspace_id = %s AND (tag LIKE %s OR tag LIKE %s) GROUP BY tag
            """,
            [workspace.pk, f"{KIND_PREFIX}%", f"{LEVEL_PREFIX}%"],
        )
        tag_counts = cursor.fetchall()
        cursor.execute(
            "SELECT source, count(*) FROM lake_delta WHERE workspace_id = %s GROUP BY source ORDER BY 2 DESC LIMIT 20",
            [workspace.pk],
        )
        sources = cursor.fetchall()
        cursor.execute(
            "SELECT embedding_model, count(*) FROM lake_delta WHERE workspace_id = %s AND embedding IS NOT NULL "
            "GROUP BY embedding_model ORDER BY 2 DESC",
            [workspace.pk],
        )
        models = cursor.fetchall()
    kinds = sorted(((tag.removeprefix(KIND_PREFIX), n) for tag, n in tag_counts if tag.startswith(KIND_PREFIX)),
                   key=lambda item: (-item[1], item[0]))
    levels = sorted((tag.removeprefix(LEVEL_PREFIX), n) for tag, n in tag_counts if tag.startswith(LEVEL_PREFIX))
    return {
        "deltas": total,
        "embedded": embedded,
        "awaiting_embedding": total - embedded,
        "provenance": provenance,
        "provenance_with_centroid": centroids,
        "provenance_by_level": {level: n for level, n in levels},
        "kinds": {kind: n for kind, n in kinds},
        "sources": {source or "": n for source, n in sources},
        "embedding_models": {model or "": n for model, n in models},
        "oldest": oldest,
        "newest": newest,
        "embedder": {"name": embedder_name(), "dimensions": settings.EMBEDDING_DIMENSIONS},
    }


def orient_current(*, workspace: Workspace, river: str = "", before: datetime | None = None) -> Delta | None:
    """The latest kind:orient of the river (a session's tag), else of the workspace; with `before`,
    the one that stood at that moment. Read for every fire's system message, so it stays cheap on a
    large lake: the OFFSET 0 fence makes PostgreSQL find the few orients through the tags' GIN index
    instead of walking the whole workspace backwards in time."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM (SELECT id, created_at, tags FROM lake_delta WHERE workspace_id = %s "
            "AND tags @> ARRAY['kind:orient']::varchar[] AND created_at < %s OFFSET 0) AS orients "
            "ORDER BY tags @> ARRAY[%s]::varchar[] DESC, created_at DESC, id DESC LIMIT 1",
            [workspace.pk, before or timezone.now(), river or "kind:orient"])
        row = cursor.fetchone()
    return Delta.objects.defer("embedding", "provenance_embedding", "search_vector").get(pk=row[0]) if row else None


def deltas_most_referenced(*, workspace: Workspace, verbs: Sequence[str], since: datetime,
                           until: datetime | None = None, limit: int) -> list[tuple]:
    """The workspace's deltas created in [since, until) that the most deltas point at with a
    `<verb>:<id>` tag (affirms, from, target, refutes, ...), best first: rows of (id, score, then
    one count per verb). A reference counts +1, but `refutes` and an `engagement:less` target -1."""
    counts = ", ".join(f"count(*) FILTER (WHERE verb = %s) AS verb_{n}" for n in range(len(verbs)))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH refs AS (
                SELECT split_part(tag, ':', 1) AS verb, substr(tag, strpos(tag, ':') + 1) AS target,
                       'engagement:less' = ANY(tags) AS less
                FROM lake_delta CROSS JOIN LATERAL unnest(tags) AS tag
                WHERE workspace_id = %s AND created_at >= %s AND split_part(tag, ':', 1) = ANY(%s)
            )
            SELECT d.id, sum(CASE WHEN verb = 'refutes' OR (verb = 'target' AND less) THEN -1 ELSE 1 END) AS score,
                   {counts}
            FROM refs JOIN lake_delta d ON d.id = refs.target AND d.workspace_id = %s
            WHERE d.created_at >= %s AND d.created_at < %s
            GROUP BY d.id ORDER BY score DESC, max(d.created_at) DESC, d.id LIMIT %s
            """,
            # a reference is written after what it names: the window bounds the scan of references too
            [workspace.pk, since, list(verbs), *verbs, workspace.pk, since, until or timezone.now(), limit])
        return cursor.fetchall()


def deltas_grouped(*, workspace: Workspace, by: str, tags: Sequence[str] = (), since: datetime | None = None,
                   until: datetime | None = None, quiet_since: datetime | None = None,
                   most_recent_first: bool = False, limit: int) -> list[tuple]:
    """(value, count, last seen) per source (`by="source"`), or per value of the tags `<by>:<value>`,
    of the workspace's deltas carrying all of `tags`, created in [since, until); with `quiet_since`,
    only the values not seen since then. Largest count first, or the most recently seen."""
    conditions, params = ["workspace_id = %s"], [workspace.pk]
    if by == "source":
        value, value_params, source = "source", [], "lake_delta"
    else:
        prefix = f"{by}:"
        value, value_params = "substr(tag, %s)", [len(prefix) + 1]
        source = "lake_delta CROSS JOIN LATERAL unnest(tags) AS tag"
        conditions.append("tag LIKE %s")
        params.append(prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
    if tags:
        conditions.append("tags @> %s::varchar[]")
        params.append(list(tags))
    if since is not None:
        conditions.append("created_at >= %s")
        params.append(since)
    if until is not None:
        conditions.append("created_at < %s")
        params.append(until)
    having_sql, having_params = ("HAVING max(created_at) < %s", [quiet_since]) if quiet_since else ("", [])
    order = "3 DESC, 1" if most_recent_first else "2 DESC, 1"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {value} AS v, count(*), max(created_at) FROM {source} "
                       f"WHERE {' AND '.join(conditions)} GROUP BY v {having_sql} ORDER BY {order} LIMIT %s",
                       [*value_params, *params, *having_params, limit])
        return cursor.fetchall()
