"""State changes of the lake: writing deltas (one or a batch, idempotently), embedding them,
writing provenance with its centroid, and refreshing centroids.

Deltas are immutable except for their embeddings: nothing here edits a moment."""

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from fathom import outbox
from fathom.errors import ApplicationError, idempotency_key_reused
from fathom.models import Workspace
from lake.embedders import embedder_name, get_embedder
from lake.models import (
    FROM_PREFIX,
    LEVEL_PREFIX,
    PROVENANCE_TAG,
    Delta,
    IdempotentWrite,
    Media,
)
from lake.selectors import deltas_filter, deltas_resolve

MAX_BATCH = 1000
MAX_TAG_LENGTH = 200
# The level a plain moment sits at: a provenance over moments only may be level 0 (a Q/A marker)
# or higher, and defaults to 1 (an episode).
MOMENT_LEVEL = -1
DEFAULT_PROVENANCE_LEVEL = 1
# How lake.media names an upload: the SHA-256 of its bytes, in lowercase hex.
MEDIA_HASH = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class DeltaWrite:
    deltas: list[Delta]
    replayed: bool  # True when an Idempotency-Key matched an earlier write: nothing new was written


def delta_create(*, workspace: Workspace, content: str = "", tags: Iterable[str] = (), source: str = "",
                 created_at: datetime | None = None, media_hash: str = "") -> Delta:
    """Write one delta; it is findable by text at once and by vector once the embedding task ran."""
    item = {"content": content, "tags": list(tags), "source": source, "created_at": created_at,
            "media_hash": media_hash}
    return deltas_create(workspace=workspace, items=[item]).deltas[0]


@transaction.atomic
def deltas_create(*, workspace: Workspace, items: Sequence[dict], idempotency_key: str = "") -> DeltaWrite:
    """Write up to MAX_BATCH deltas in one transaction (all or none) and queue their embedding after
    commit. Each item: content, tags, source, created_at (the moment; now when absent), media_hash (the
    hash of an image this workspace uploaded to the media store; any other is refused with a 400).

    With an `idempotency_key`, a retry of the same batch returns the deltas written the first time
    and writes nothing; the same key with a different batch is refused (422)."""
    if not items:
        raise ApplicationError("send at least one delta", details={"field": "items"})
    if len(items) > MAX_BATCH:
        raise ApplicationError(f"at most {MAX_BATCH} deltas per request, got {len(items)}",
                               details={"field": "items", "count": len(items)})
    cleaned = [_clean_item(index, item, many=len(items) > 1) for index, item in enumerate(items)]
    _check_media_uploaded(workspace, cleaned)

    record = None
    if idempotency_key:
        request_hash = _request_hash(cleaned)
        # A concurrent request with the same key blocks on the unique index until this one commits,
        # then finds this record: the batch is written exactly once either way.
        record, created = IdempotentWrite.objects.get_or_create(
            workspace=workspace, key=idempotency_key, defaults={"request_hash": request_hash})
        if not created:
            if record.request_hash != request_hash:
                raise idempotency_key_reused(idempotency_key, what="a different batch")
            by_id = Delta.objects.filter(workspace=workspace, id__in=record.delta_ids).in_bulk()
            return DeltaWrite(deltas=[by_id[i] for i in record.delta_ids if i in by_id], replayed=True)

    now = timezone.now()
    deltas = Delta.objects.bulk_create(
        [Delta(workspace=workspace, created_at=item["created_at"] or now, source=item["source"], tags=item["tags"],
               content=item["content"], media_hash=item["media_hash"]) for item in cleaned]
    )
    if record is not None:
        record.delta_ids = [delta.id for delta in deltas]
        record.save(update_fields=["delta_ids"])
    embedding_enqueue(delta_ids=[delta.id for delta in deltas])
    return DeltaWrite(deltas=deltas, replayed=False)


def embedding_enqueue(*, delta_ids: Sequence[str], batch_size: int | None = None) -> None:
    """Queue the embedding of these deltas, in batches (of EMBEDDING_BATCH_SIZE unless given), once
    the current transaction commits."""
    size = batch_size or settings.EMBEDDING_BATCH_SIZE
    for start in range(0, len(delta_ids), size):
        batch = list(delta_ids[start:start + size])
        outbox.enqueue("memory.embed_deltas", args=[batch], **embedding_time_limits())


def embedding_time_limits() -> dict:
    """The embedding task's time limits (EMBEDDING_SOFT_TIME_LIMIT_SECONDS, the hard one a minute
    later). They travel in each task's message, and a worker obeys the message's: a sender reads
    them from settings as it sends."""
    soft = settings.EMBEDDING_SOFT_TIME_LIMIT_SECONDS
    return {"soft_time_limit": soft, "time_limit": soft + 60}


def embedding_missing_enqueue(*, limit: int) -> int:
    """Queue, in batches, the embedding of up to `limit` deltas that still have no vector
    EMBEDDING_SWEEP_GRACE_SECONDS after their moment: their own task gave up during a provider
    outage, or was never sent. Returns how many were queued. A delta whose own task is still on its
    way may be queued twice (an import sets moments in the past): the second run finds its vector
    and asks the provider nothing."""
    cutoff = timezone.now() - timedelta(seconds=settings.EMBEDDING_SWEEP_GRACE_SECONDS)
    ids = list(Delta.objects.filter(embedding__isnull=True, created_at__lte=cutoff)
               .order_by("created_at", "id").values_list("id", flat=True)[:limit])
    embedding_enqueue(delta_ids=ids)
    return len(ids)


def deltas_embed(*, delta_ids: Sequence[str], force: bool = False) -> int:
    """Compute and store the embeddings of these deltas; returns how many rows were written.

    Idempotent: without `force` only rows that still have no embedding are computed, and the
    UPDATE writes only rows that are still empty, so a redelivered or concurrent run writes
    nothing twice. `provenance_embedding` is never touched here: a provenance's centroid is
    written by the provenance service. Once the constituents of a provenance all have vectors,
    its pending centroid is filled."""
    queryset = Delta.objects.filter(id__in=list(delta_ids))
    if not force:
        queryset = queryset.filter(embedding__isnull=True)
    rows = list(queryset.order_by("id").values_list("id", "content", "tags"))
    if not rows:
        return 0
    embedder = get_embedder()
    vectors = embedder.embed([_embedding_text(content, tags) for _, content, tags in rows])
    ids = [row[0] for row in rows]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE lake_delta AS d SET embedding = v.vector::vector, embedding_model = %s "
            "FROM unnest(%s::text[], %s::text[]) AS v(id, vector) "
            "WHERE d.id = v.id" + ("" if force else " AND d.embedding IS NULL"),
            [embedder.name, ids, [_vector_text(vector) for vector in vectors]],
        )
        written = cursor.rowcount
        provenance_centroids_refresh(child_ids=ids, force=force)
    return written


@transaction.atomic
def provenance_create(*, workspace: Workspace, title: str, child_ids: list[str], level: int | None = None,
                      content: str = "", tags: Iterable[str] = (), source: str = "provenance") -> Delta:
    """Write a `kind:provenance` delta naming a stretch of the lake: its content is the title (first
    line) and the summary, its tags `kind:provenance`, `provenance-level:<n>` and one `from:<id>` per
    constituent. `child_ids` may be ids or unique prefixes of deltas of this workspace.

    A provenance sits strictly above its children: a moment counts as level -1 and a provenance as
    its own level, so the minimum level is one more than the highest child's; with `level=None` it
    is that minimum (at least 1, an episode). A lower level, an unknown child or an empty title
    raises ApplicationError with the reason.

    `provenance_embedding` is set at write time to the centroid of the constituents' embeddings
    when they all have one; otherwise it stays empty until the embedding task has embedded the
    last of them, and is never overwritten after that (see `provenance_centroids_refresh`)."""
    title = " ".join(title.split())
    if not title:
        raise ApplicationError("a provenance needs a title", details={"field": "title"})
    if not child_ids:
        raise ApplicationError("a provenance needs at least one constituent", details={"field": "child_ids"})
    children = deltas_resolve(workspace=workspace, ids_or_prefixes=child_ids)
    children = list({child.id: child for child in children}.values())  # the same child twice counts once

    if level is None:
        level = provenance_level_default(children=children)
    provenance_level_check(children=children, level=level)

    extra_tags = _clean_tags(tags, field="tags")
    for tag in extra_tags:
        if tag.startswith((LEVEL_PREFIX, FROM_PREFIX)):
            raise ApplicationError(f"tag {tag!r} is written by the provenance service from level and child_ids",
                                   details={"field": "tags"})
    all_tags = _dedupe([PROVENANCE_TAG, f"{LEVEL_PREFIX}{level}", *extra_tags,
                        *(f"{FROM_PREFIX}{child.id}" for child in children)])
    text = f"{title}\n\n{content.strip()}" if content.strip() else title
    delta = Delta.objects.create(workspace=workspace, source=source[:200], tags=all_tags, content=text)
    provenance_centroids_refresh(provenance_ids=[delta.id])
    delta.refresh_from_db(fields=["provenance_embedding"])
    embedding_enqueue(delta_ids=[delta.id])
    return delta


def provenance_level_check(*, children: Sequence[Delta], level: int) -> None:
    """Raise ApplicationError (code `provenance_level`, naming the rule) unless a provenance at `level`
    may wrap `children`: a level of 0 or more, strictly above the highest child. The one home of the
    rule: the lake's writes and the proposals' drafts call it."""
    if level < 0:
        raise ApplicationError(f"provenance level must be 0 or more, not {level}", code="provenance_level",
                               details={"field": "level", "level": level})
    minimum = provenance_level_minimum(children=children)
    if level < minimum:
        highest_child = max(children, key=_level_as_constituent)
        raise ApplicationError(
            f"a provenance must sit strictly above its children: {highest_child.id} is at level "
            f"{_level_as_constituent(highest_child)}, so this provenance needs level {minimum} or higher, not {level}",
            code="provenance_level",
            details={"field": "level", "level": level, "minimum_level": minimum, "highest_child": highest_child.id})


def provenance_level_minimum(*, children: Iterable[Delta]) -> int:
    """The lowest level a provenance over `children` may take: strictly above the highest of them,
    a moment counting as MOMENT_LEVEL. The one home of the rule (proposals import it)."""
    return max(_level_as_constituent(child) for child in children) + 1


def provenance_level_default(*, children: Iterable[Delta]) -> int:
    """The level a provenance over `children` takes when none is asked for: the lowest allowed, and
    at least DEFAULT_PROVENANCE_LEVEL (an episode)."""
    return max(provenance_level_minimum(children=children), DEFAULT_PROVENANCE_LEVEL)


def _level_as_constituent(delta: Delta) -> int:
    return delta.level if delta.is_provenance and delta.level is not None else MOMENT_LEVEL


def provenance_centroids_refresh(*, provenance_ids: Sequence[str] | None = None,
                                 child_ids: Sequence[str] | None = None, workspace: Workspace | None = None,
                                 force: bool = False, partial: bool = False) -> int:
    """Set `provenance_embedding` to the centroid (mean) of the constituents' embeddings for the
    provenances chosen by `provenance_ids`, by having one of `child_ids` as a constituent, or all
    of `workspace` (or of the lake). Returns how many were written.

    Only empty centroids are written unless `force`; a centroid is computed only when every
    constituent has an embedding unless `partial` (the backfill's choice for constituents that
    will never have one)."""
    conditions = ["p.tags @> ARRAY[%s]::varchar[]"]
    params: list = [PROVENANCE_TAG]
    if provenance_ids is not None:
        conditions.append("p.id = ANY(%s)")
        params.append(list(provenance_ids))
    if child_ids is not None:
        conditions.append("p.tags && %s::varchar[]")
        params.append([f"{FROM_PREFIX}{child_id}" for child_id in child_ids])
    if workspace is not None:
        conditions.append("p.workspace_id = %s")
        params.append(workspace.pk)
    if not force:
        conditions.append("p.provenance_embedding IS NULL")
    complete = "" if partial else "HAVING count(*) FILTER (WHERE c.embedding IS NULL) = 0"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE lake_delta AS target SET provenance_embedding = centroids.centroid
            FROM (
                SELECT p.id, avg(c.embedding) AS centroid
                FROM lake_delta AS p
                CROSS JOIN LATERAL unnest(p.tags) AS tag
                JOIN lake_delta AS c ON c.id = substr(tag, {len(FROM_PREFIX) + 1}) AND c.workspace_id = p.workspace_id
                WHERE tag LIKE '{FROM_PREFIX}%%' AND {" AND ".join(conditions)}
                GROUP BY p.id
                {complete}
            ) AS centroids
            WHERE target.id = centroids.id AND centroids.centroid IS NOT NULL
            """,
            params,
        )
        return cursor.rowcount


def deltas_reembed(*, workspace: Workspace | None = None, tags: Sequence[str] = (), kind: str = "",
                   source: str = "", since: datetime | None = None, until: datetime | None = None,
                   missing_only: bool = False, stale_only: bool = False, batch_size: int | None = None,
                   progress: Callable[[int, int], None] | None = None) -> int:
    """Recompute the embeddings of the chosen deltas in batches with the configured embedder (all of
    them, only those without one, or only those made by another embedder), then recompute the
    centroids of the provenances over them, which now live in the new vectors' space. Calls
    `progress(done, total)` after each batch; returns how many were written."""
    queryset = deltas_filter(Delta.objects.all() if workspace is None else Delta.objects.filter(workspace=workspace),
                             tags=tags, kind=kind, source=source, since=since, until=until)
    if missing_only:
        queryset = queryset.filter(embedding__isnull=True)
    if stale_only:
        queryset = queryset.exclude(embedding_model=embedder_name(), embedding__isnull=False)
    ids = list(queryset.order_by("id").values_list("id", flat=True))
    size = batch_size or settings.EMBEDDING_BATCH_SIZE
    written = 0
    for start in range(0, len(ids), size):
        batch = ids[start:start + size]
        written += deltas_embed(delta_ids=batch, force=not missing_only)
        if progress:
            progress(min(start + size, len(ids)), len(ids))
    if progress and not ids:
        progress(0, 0)
    return written


def deltas_reembed_stale(*, limit: int) -> tuple[int, bool]:
    """Embed again up to `limit` deltas whose vector another embedder made (an upgrade of the
    offline embedder, a change of EMBEDDER or EMBEDDING_MODEL), so the lake lives in one vector
    space again without an operator's command. Returns how many were written and whether more
    are left. Deltas still waiting for their first vector are the embedding task's, not this."""
    ids = list(Delta.objects.filter(embedding__isnull=False).exclude(embedding_model=embedder_name())
               .order_by().values_list("id", flat=True)[:limit + 1])
    return deltas_embed(delta_ids=ids[:limit], force=True), len(ids) > limit


# --- helpers ---------------------------------------------------------------------------------------


def _clean_item(index: int, item: dict, *, many: bool) -> dict:
    def fail(field: str, message: str):
        raise _item_error(index, field, message, many=many)

    content = item.get("content") or ""
    media_hash = (item.get("media_hash") or "").strip().lower()
    if not content.strip() and not media_hash:
        fail("content", "a delta needs content or a media_hash")
    if media_hash and not MEDIA_HASH.fullmatch(media_hash):
        fail("media_hash", "give the SHA-256 (64 hex characters) POST /v1/media answered for the image")
    try:
        tags = _clean_tags(item.get("tags") or [], field="tags")
    except ApplicationError as exc:
        fail("tags", exc.message)
    for tag in tags:
        if tag == PROVENANCE_TAG or tag.startswith(LEVEL_PREFIX):
            fail("tags", f"{tag!r} is reserved: provenance is written by the provenance service "
                         "(proposals), which checks its level and computes its centroid")
    created_at = item.get("created_at")
    if created_at is not None and timezone.is_naive(created_at):
        fail("created_at", "give a time zone (e.g. 2026-03-01T12:00:00Z)")
    return {"content": content, "tags": tags, "source": (item.get("source") or "").strip(),
            "created_at": created_at, "media_hash": media_hash}


def _check_media_uploaded(workspace: Workspace, items: Sequence[dict]) -> None:
    """Refuse a media_hash this workspace never uploaded: recall renders it as [image <hash>], which a
    model reads as something it may cite and open."""
    named = {item["media_hash"] for item in items if item["media_hash"]}
    if not named:
        return
    uploaded = set(Media.objects.filter(workspace=workspace, hash__in=named).values_list("hash", flat=True))
    for index, item in enumerate(items):
        if item["media_hash"] and item["media_hash"] not in uploaded:
            raise _item_error(index, "media_hash", "no image with this hash was uploaded to this workspace "
                                                   "(POST /v1/media first)", many=len(items) > 1)


def _item_error(index: int, field: str, message: str, *, many: bool) -> ApplicationError:
    """The error naming one item's field: `items[<index>].<field>` in a batch, `<field>` alone otherwise."""
    where = f"items[{index}].{field}" if many else field
    return ApplicationError(f"{where}: {message}", details={"item": index, "field": field})


def _clean_tags(tags: Iterable[str], *, field: str) -> list[str]:
    cleaned = []
    for tag in tags:
        tag = str(tag).strip()
        if not tag:
            raise ApplicationError("tags may not be empty", details={"field": field})
        if len(tag) > MAX_TAG_LENGTH or any(char.isspace() for char in tag):
            raise ApplicationError(f"tag {tag[:40]!r} must be at most {MAX_TAG_LENGTH} characters with no spaces",
                                   details={"field": field})
        cleaned.append(tag)
    return _dedupe(cleaned)


def _dedupe(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _request_hash(items: list[dict]) -> str:
    canonical = json.dumps(items, sort_keys=True, default=lambda value: value.isoformat())
    return hashlib.sha256(canonical.encode()).hexdigest()


def _embedding_text(content: str, tags: Sequence[str]) -> str:
    # A picture with no caption is still findable by what its tags say.
    return content if content.strip() else " ".join(tags)


def _vector_text(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(value)) for value in vector) + "]"

