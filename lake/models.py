"""The lake: deltas, one moment each, and the record that makes a retried batch write nothing twice.

Structure lives in the lake as tagged deltas (seed 000: "the graph IS the data"): a provenance is a
`kind:provenance` delta whose `from:<id>` tags point at its constituents, so the child -> parent
index is the GIN index over `tags`, correct in every process that reads the database."""

import secrets

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.db.models.functions import Left
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from fathom.models import WorkspaceScoped

ID_LENGTH = 16  # hex characters of a new delta id (64 random bits)
MIN_PREFIX_LENGTH = 8  # the shortest prefix the API and the tools resolve
TEXT_SEARCH_CONFIG = "english"
# The full-text index reads at most this many characters of a delta's content: PostgreSQL's tsvector
# holds at most 1 MB, and even a text of short distinct words (4 to 7 bytes of tsvector a character,
# 4-byte characters included) stays under it. The rest is found by vector.
TEXT_INDEX_PREFIX_CHARS = 100_000

KIND_PREFIX = "kind:"
FROM_PREFIX = "from:"
LEVEL_PREFIX = "provenance-level:"
STRUCTURAL_PREFIXES = (KIND_PREFIX, FROM_PREFIX, LEVEL_PREFIX)  # tags that say what a delta is or holds
PROVENANCE_TAG = "kind:provenance"
SEDIMENT_TAG = "kind:sediment"
QA_MARKER_TAG = "kind:qa-marker"
# The agent's own output: what a fire wrote (answers' cards and artifacts, Q/A markers, its standpoint,
# engagements, judge axes), what producers, the marker dedup and proposals recorded (proposals,
# decisions, the folds of markers, reflections over its own writes). Search ranks it as what it is,
# an echo of the sources, below them (lake.search.own_output); producers never take it for material.
AGENT_SOURCES = frozenset({"harness", "harness-introspect", "producer", "autonomy", "proposals"})
AGENT_TAGS = frozenset({
    QA_MARKER_TAG, "kind:card", "kind:insight", "kind:recommendation", "kind:document", "kind:proposal",
    "kind:decision", "kind:standpoint-attestation", "kind:mood-shift", "kind:directive", "kind:engagement-attest",
    "kind:judge-axes", "qa-dedup", "producer:reflective"})


def is_agent_output(*, source: str, tags) -> bool:
    """Whether a delta is the agent's own output (AGENT_SOURCES, AGENT_TAGS) rather than a source."""
    return source in AGENT_SOURCES or not AGENT_TAGS.isdisjoint(tags)


def new_delta_id() -> str:
    return secrets.token_hex(ID_LENGTH // 2)


class Delta(WorkspaceScoped):
    """One moment. Immutable except for its embeddings: a correction is a new delta (a trigger in
    the database refuses any other change)."""

    # Django adds a varchar_pattern_ops index to this key: it serves `id LIKE 'prefix%'` lookups.
    id = models.CharField(primary_key=True, max_length=32, default=new_delta_id, editable=False)
    # The moment it happened; an import sets it (the inherited auto_now_add could not be set).
    created_at = models.DateTimeField(default=timezone.now)
    source = models.CharField(max_length=200, blank=True)
    tags = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    content = models.TextField(blank=True)
    media_hash = models.CharField(max_length=128, blank=True)
    # The content's vector, filled by the embedding task after commit (NULL until then).
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    # For a provenance only: the centroid of its constituents' embeddings, set at write time.
    provenance_embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    # Which embedder computed `embedding` ("hashing:hashing-v2", "openai:text-embedding-3-small").
    embedding_model = models.CharField(max_length=200, blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector(Left("content", TEXT_INDEX_PREFIX_CHARS), config=TEXT_SEARCH_CONFIG),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["workspace", "created_at", "id"], name="lake_delta_ws_time"),
            # No pending list (fastupdate off): every search would scan what is pending linearly
            # until autovacuum merges it, so recall slows right after a bulk write.
            GinIndex(fields=["tags"], name="lake_delta_tags", fastupdate=False),
            GinIndex(fields=["search_vector"], name="lake_delta_fts", fastupdate=False),
            HnswIndex(fields=["embedding"], name="lake_delta_embedding_hnsw", m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"]),
            HnswIndex(fields=["provenance_embedding"], name="lake_delta_centroid_hnsw", m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"]),
            # The embedding task's and `reembed --missing`'s queue: small, only rows still waiting.
            models.Index(fields=["workspace", "id"], name="lake_delta_unembedded", condition=Q(embedding__isnull=True)),
        ]

    def __str__(self):
        return f"{self.id} {self.title[:60]}"

    @property
    def kinds(self) -> list[str]:
        return [tag.removeprefix(KIND_PREFIX) for tag in self.tags if tag.startswith(KIND_PREFIX)]

    @property
    def from_ids(self) -> list[str]:
        return [tag.removeprefix(FROM_PREFIX) for tag in self.tags if tag.startswith(FROM_PREFIX)]

    @property
    def is_provenance(self) -> bool:
        return PROVENANCE_TAG in self.tags

    @property
    def level(self) -> int | None:
        """The provenance level (0 Q/A marker, 1 episode, 2 topic, 3 era, ...); None for a moment."""
        return level_of(self.tags)

    @property
    def title(self) -> str:
        return self.content.strip().split("\n", 1)[0].strip()


def level_of(tags) -> int | None:
    for tag in tags:
        if tag.startswith(LEVEL_PREFIX):
            try:
                return int(tag.removeprefix(LEVEL_PREFIX))
            except ValueError:
                return None
    return None


class IdempotentWrite(WorkspaceScoped):
    """A batch written under an `Idempotency-Key`: a retry with the same key and body replays the
    ids written the first time instead of writing again."""

    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    delta_ids = ArrayField(models.CharField(max_length=32), default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "key"], name="lake_idempotent_write_unique_key")]

    def __str__(self):
        return f"{self.key} ({len(self.delta_ids)} deltas)"


class Media(WorkspaceScoped):
    """Image bytes a delta names by `media_hash` (the SHA-256 of the bytes), kept in PostgreSQL so every
    process reads the same store; the model opens them with the see_image tool."""

    hash = models.CharField(max_length=64)
    media_type = models.CharField(max_length=32)
    size = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "hash"], name="media_unique_hash")]

    def __str__(self):
        return f"{self.media_type} {self.hash[:12]}"
