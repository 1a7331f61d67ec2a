"""One workspace's world model in one process (seed 002, "In-Memory Cache Layer"): the seed's structures
(`soas_by_token`, `soas_by_id`, `urd_by_concept`, `urd_by_concept_dim`, `pending_conflicts`) loaded from
PostgreSQL, the encounters this process counted, and the push of those counts to Redis. Which worlds a
process holds and when they reload is festinger/cache/registry.py's business."""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass

from django.db import connection
from redis.exceptions import RedisError

from fathom.redis_client import get_redis
from festinger.cache import keys
from festinger.models import WorldConfig
from festinger.text import normalise, ordinary
from festinger.wordscan import Lexicon

WRITE_RETRY_SECONDS = 600.0  # a concept whose write came to nothing is asked about again after this
# An incremental reload also reads what changed this long before the previous one: a transaction that
# wrote earlier but committed after that reload is still seen.
RELOAD_MARGIN_SECONDS = 120

_CONCEPTS_SQL = ("SELECT id, token, encounter_count, novelty, is_common, "
                 "coalesce(extract(epoch FROM last_seen)::float8, 0) FROM festinger_concept")
_EDGES_SQL = ("SELECT e.concept_id, e.parent_id, e.dimension_id, e.is_isa, e.confidence, "
              "extract(epoch FROM e.last_confirmed)::float8, e.source FROM festinger_edge e")

_PUSH_SCRIPT = """
for token, n in pairs(cjson.decode(ARGV[2])) do redis.call('HINCRBY', KEYS[1], token, n) end
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""
# Take what was pushed as a batch named ARGV[1] (unless a failed flush left a batch behind, which goes


@dataclass(slots=True)
class SoasRow:
    """A concept as the cache holds it; `encounter_count` is PostgreSQL's as last seen here."""

    id: int
    token: str
    encounter_count: int
    novelty: float
    is_common: bool
    last_seen: float = 0.0  # epoch seconds (0: never), as of the load or the last flush's totals


@dataclass(frozen=True, slots=True)
class UrdEdge:
    """An edge with its tokens pre-joined (the canonical recollection query's row)."""

    concept_id: int
    parent_id: int
    dim_id: int
    parent: str
    dimension: str
    is_isa: bool
    confidence: float
    confirmed: float        # last_confirmed, epoch seconds
    source: str


@dataclass(frozen=True, slots=True)
class Settings:
    """The workspace's WorldConfig as the read path needs it."""

    read_threshold: float = 0.5
    write_threshold: float = 1.2
    confidence_floor: float = 0.6
    recency_days: int = 90
    max_concepts: int = 20
    writer_role: str = "writer"
    resolver_role: str = "resolver"
    writer_calls_per_conversation: int = 4
    writer_calls_per_hour: int = 40
    half_life_days: float = 30.0


def saliency(count: int) -> float:
    """The seed's log-scaled encounter saliency: ln(count), 0 for a first encounter (Test A: log(1))."""
    return math.log(count) if count > 1 else 0.0


def priority(count: int, *, age_seconds: float, novelty: float, half_life_days: float) -> float:
    """What decides whether, and how early, a concept is recalled (seed 002, "Saliency vs novelty" and
    "Saliency Decay"): its saliency halved for every `half_life_days` since it was last seen (a concept
    not seen for long is deprioritised, never deleted; seen again, it is at full saliency at once),
    plus its novelty (1.0 once the write path confirmed it: a project-specific name that rarely
    appears still reaches the read threshold)."""
    decay = 0.5 ** (max(age_seconds, 0.0) / (half_life_days * 86400.0))
    return saliency(count) * decay + novelty


def _age(now: float, seen: float) -> float:
    """Seconds since a concept was last seen; 0 when that was never recorded (no decay without a date)."""
    return now - seen if seen else 0.0


class World:
    """One workspace's world model in this process (see the module docstring)."""

    def __init__(self, workspace_id: int):
        self.workspace_id = workspace_id
        self.settings = Settings()
        self.soas_by_token: dict[str, SoasRow] = {}
        self.soas_by_id: dict[int, str] = {}
        self.urd_by_concept: dict[int, tuple[UrdEdge, ...]] = {}
        self.urd_by_concept_dim: dict[tuple[int, int], UrdEdge] = {}
        self.pending_conflicts: set[tuple[int, int]] = set()
        self.dimensions: dict[int, str] = {}
        self.dictionary: frozenset[str] = frozenset()  # the pre-seeded common words
        self.common: frozenset[str] = frozenset()   # tokens whose saliency stays 0
        self.counted: Counter = Counter()            # encounters counted here since the row's count
        self.unpushed: list[dict] = []               # counts of other tokens, counted here, not yet in Redis
        self.lexicon = Lexicon(self.common)          # counts the common words' encounters until the push
        self.lexicon_of = self.common                # the common words it was made of
        self.write_requested: dict[str, float] = {}  # concept -> when this process last asked the writer
        self.seen_here: dict[str, float] = {}         # token -> when this process last counted it (epoch)
        self.stale = False         # a write elsewhere committed since the last reload
        self.flushed: str | None = None
        self.staged_totals: dict | None = None  # fetched by the background thread after a flush
        self.loaded_at = 0.0
        self.graph_since = 0.0     # when the last graph reload started (epoch seconds)
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._push_lock = threading.Lock()

    # --- the read path ------------------------------------------------------------------------

    def sync(self) -> None:
        """Reload what other processes changed (`stale`) and take the flushed totals the background
        thread fetched. Memory and PostgreSQL only: what changed is known without asking Redis."""
        if self.stale:
            with self._lock:
                if self.stale:
                    self.stale = False
                    try:
                        self._reload_graph(full=self.graph_since == 0)
                    except BaseException:
                        self.stale = True
                        raise
        self.totals_take()

    def totals_take(self) -> None:
        """Take in the flushed totals the background thread fetched (memory only)."""
        staged = self.staged_totals
        if staged is not None:
            with self._lock:
                if self.staged_totals is staged:
                    self.staged_totals = None
                    self._refresh_counts(staged)

    def count(self, text: str) -> dict[str, int]:
        """Count one encounter of each token of `text`; returns {token: occurrences} for those that can be
        salient (not common words), the only ones whose counts are kept here. Every count goes to the
        database: the common words' in the Lexicon, the others' in `unpushed`."""
        merged = normalise(text)  # the regex and lowercasing work done before taking the lock
        with self._count_lock:
            others = self._lexicon().count(merged)  # common words counted in C, no string each
            others = {token: n for token, n in others.items() if not _never_a_concept(token)}
            self.unpushed.append(others)
        counted, get = self.counted, self.counted.get  # not counted[token] += n: Counter's __missing__ is Python
        now = time.time()
        for token, n in others.items():
            counted[token] = get(token, 0) + n
        self.seen_here.update(dict.fromkeys(others, now))
        return others

    def _lexicon(self) -> Lexicon:
        """The Lexicon of the current common words, made anew when they changed (what the old one
        counted waits for the push). Under `_count_lock`."""
        if self.lexicon_of is not self.common:
            self.unpushed.append(self.lexicon.take())
            self.lexicon, self.lexicon_of = Lexicon(self.common), self.common
        return self.lexicon

    def candidates(self, token_lists) -> set[str]:
        """The distinct tokens of these lists that can be salient (not common words)."""
        return {token for token in set().union(*token_lists).difference(self.common) if not _never_a_concept(token)}

    def encounters(self, token: str) -> int:
        row = self.soas_by_token.get(token)
        return (row.encounter_count if row is not None else 0) + self.counted.get(token, 0)

    def saliency(self, token: str) -> float:
        if token in self.common:
            return 0.0
        return saliency(self.encounters(token))

    def priority(self, token: str, now: float | None = None) -> float:
        """The concept's recollection priority (`priority`): decayed saliency plus novelty."""
        if token in self.common:
            return 0.0
        row = self.soas_by_token.get(token)
        seen = max(row.last_seen if row is not None else 0.0, self.seen_here.get(token, 0.0))
        return priority(self.encounters(token), age_seconds=_age(time.time() if now is None else now, seen),
                        novelty=row.novelty if row is not None else 0.0, half_life_days=self.settings.half_life_days)

    def salient(self, candidates, now: float | None = None, pending: Counter | None = None) -> list[tuple[str, float]]:
        """(token, priority) for the distinct candidates (from `count` or `candidates`) whose priority
        (saliency decayed by the time since the concept was last seen, plus its novelty) is at or above
        the read threshold, highest first. `pending`: encounters about to be counted, counted in."""
        settings = self.settings
        threshold, half_life, now = settings.read_threshold, settings.half_life_days, time.time() if now is None else now
        found = []
        rows, counted, seen_here = self.soas_by_token.get, self.counted.get, self.seen_here.get
        for token in candidates:
            row = rows(token)
            if row is None:
                n, novelty, seen = counted(token, 0), 0.0, seen_here(token, 0.0)
            else:
                n, novelty = row.encounter_count + counted(token, 0), row.novelty
                seen = max(row.last_seen, seen_here(token, 0.0))
            if pending and token in pending:  # about to be counted: seen now
                n, seen = n + pending[token], now
            if n < 2 and novelty == 0.0:
                continue  # saliency 0: below any threshold (the common case, decided without arithmetic)
            value = priority(n, age_seconds=_age(now, seen), novelty=novelty, half_life_days=half_life)
            if value >= threshold:
                found.append((token, value))
        found.sort(key=lambda pair: -pair[1])
        return found

    def to_write(self, salient: list[tuple[str, float]]) -> list[str]:
        """Of these (token, saliency) pairs, the tokens that crossed the write threshold, were never
        written (novelty 0) and are no ordinary word (festinger.text.ordinary: `nightly` needs no writer),
        each returned once per process every WRITE_RETRY_SECONDS (a write that failed or got lost is
        asked again; the writer's lock keeps two from running at once)."""
        threshold = self.settings.write_threshold
        now = time.monotonic()
        found = []
        for token, value in salient:
            if value < threshold or now - self.write_requested.get(token, -WRITE_RETRY_SECONDS) < WRITE_RETRY_SECONDS:
                continue
            row = self.soas_by_token.get(token)
            if (row is None or row.novelty == 0) and not ordinary(token, self.dictionary):
                self.write_requested[token] = now
                found.append(token)
        return found

    def edges(self, token: str) -> tuple[UrdEdge, ...]:
        row = self.soas_by_token.get(token)
        return self.urd_by_concept.get(row.id, ()) if row is not None else ()

    def concept_id(self, token: str) -> int | None:
        row = self.soas_by_token.get(token)
        return row.id if row is not None else None

    # --- loading ------------------------------------------------------------------------------

    def load(self) -> None:
        """Everything, from PostgreSQL (first use and the operator's reload)."""
        with connection.cursor() as cursor:
            cursor.execute(_CONCEPTS_SQL + " WHERE workspace_id = %s", [self.workspace_id])
            soas = {row[1]: SoasRow(*row) for row in cursor.fetchall()}
        with self._lock:
            self.soas_by_token = soas
            self.soas_by_id = {row.id: token for token, row in soas.items()}
            self.dictionary = frozenset(token for token, row in soas.items() if row.is_common)
            self.counted = Counter({t: n for t, n in self._unpushed_counts().items() if t not in self.dictionary})
            self._reload_graph(full=True)
            self.loaded_at = time.time()

    def _reload_graph(self, *, full: bool = False) -> None:
        """The graph from PostgreSQL: all of it (`full`), or what changed since the last reload: edges
        created or confirmed since (with a margin for transactions that committed late), and every
        edge of the concepts whose edges a resolution or an operator removed or moved (EdgeHistory).
        The pending conflicts and the configuration are read whole (both are small)."""
        started = time.time()
        with connection.cursor() as cursor:
            if full:
                cursor.execute(_EDGES_SQL + " WHERE e.workspace_id = %s", [self.workspace_id])
                touched, rows = None, cursor.fetchall()
            else:
                since = self.graph_since - RELOAD_MARGIN_SECONDS
                cursor.execute("SELECT DISTINCT concept_id FROM festinger_edgehistory "
                               "WHERE workspace_id = %s AND created_at > to_timestamp(%s)",
                               [self.workspace_id, since])
                touched = [row[0] for row in cursor.fetchall()]
                cursor.execute(_EDGES_SQL + " WHERE e.workspace_id = %s AND (e.created_at > to_timestamp(%s) "
                               "OR e.last_confirmed > to_timestamp(%s) OR e.concept_id = ANY(%s))",
                               [self.workspace_id, since, since, touched])
                rows = cursor.fetchall()
            cursor.execute("SELECT concept_id, dimension_id FROM festinger_conflict "
                           "WHERE workspace_id = %s AND status = 'pending'", [self.workspace_id])
            pending = set(cursor.fetchall())
            referenced = {pk for row in rows for pk in row[:3]}
            missing = [pk for pk in referenced if pk not in self.soas_by_id]
            if missing:
                cursor.execute(_CONCEPTS_SQL + " WHERE id = ANY(%s)", [missing])
                for row in cursor.fetchall():
                    self._add_row(SoasRow(*row))
        self._apply_edges(rows, touched)
        self.pending_conflicts = pending
        self._read_settings()
        self.graph_since = started

    def _apply_edges(self, rows, touched) -> None:
        """Install edge rows: all of them (`touched` None: new structures, swapped in at the end), or
        changes (the touched concepts' edges are replaced whole, other rows replace or join)."""
        full = touched is None
        by_concept = {} if full else self.urd_by_concept
        by_concept_dim = {} if full else self.urd_by_concept_dim
        dimensions = {} if full else self.dimensions
        replaced = set() if full else set(touched)
        for concept_id in replaced:
            for edge in by_concept.pop(concept_id, ()):
                by_concept_dim.pop((concept_id, edge.dim_id), None)
        fresh: dict[int, dict[int, UrdEdge]] = {}
        tokens = self.soas_by_id
        for concept_id, parent_id, dim_id, is_isa, confidence, confirmed, source in rows:
            edge = UrdEdge(concept_id, parent_id, dim_id, tokens[parent_id], tokens[dim_id], is_isa, confidence,
                           confirmed, source)
            by_concept_dim[(concept_id, dim_id)] = edge
            if concept_id == parent_id == dim_id:
                dimensions[dim_id] = edge.dimension
            else:
                fresh.setdefault(concept_id, {})[dim_id] = edge
        for concept_id, edges in fresh.items():
            held = {} if full or concept_id in replaced else {e.dim_id: e for e in by_concept.get(concept_id, ())}
            held.update(edges)
            # A concept's edges in the canonical query's order: dimension id descending.
            by_concept[concept_id] = tuple(held[dim_id] for dim_id in sorted(held, reverse=True))
        if full:
            self.urd_by_concept, self.urd_by_concept_dim, self.dimensions = by_concept, by_concept_dim, dimensions
            # A dictionary word stays at saliency 0 until the world knows something about it.
            self.common = self.dictionary.difference(tokens[pk] for pk in by_concept)
            return
        changed = {tokens[pk] for pk in replaced | fresh.keys()} & self.dictionary
        if changed:
            known = {token for token in changed if self.soas_by_token[token].id in by_concept}
            self.common = (self.common - known) | (changed - known)

    def _add_row(self, row: SoasRow) -> None:
        self.soas_by_token[row.token] = row
        self.soas_by_id[row.id] = row.token
        if row.is_common:
            self.dictionary |= {row.token}
            self.common |= {row.token}

    def _read_settings(self) -> None:
        config = WorldConfig.objects.filter(workspace_id=self.workspace_id).first()
        if config is not None:
            self.settings = Settings(
                read_threshold=config.saliency_read_threshold, write_threshold=config.saliency_write_threshold,
                confidence_floor=config.recollection_confidence_floor,
                recency_days=config.recollection_recency_days, max_concepts=config.recollection_max_concepts,
                writer_role=config.writer_role, resolver_role=config.resolver_role,
                writer_calls_per_conversation=config.writer_calls_per_conversation,
                writer_calls_per_hour=config.writer_calls_per_hour, half_life_days=config.saliency_half_life_days)

    def _refresh_counts(self, totals: dict[str, str]) -> None:
        """Take the totals of the last flush: the counts every process pushed until then."""
        unpushed = self._unpushed_counts()
        for token, total in totals.items():
            pk, count, *seen = total.split(":")
            pk, count, last_seen = int(pk), int(count), float(seen[0]) if seen else 0.0
            row = self.soas_by_token.get(token)
            if row is None:  # first flushed since the load
                self._add_row(SoasRow(pk, token, count, 0.0, False, last_seen))
            else:
                row.encounter_count, row.last_seen = count, max(row.last_seen, last_seen)
            # What this process counted is now in the total, except what it has not pushed yet.
            if token not in self.common:
                self.counted[token] = unpushed.get(token, 0)

    def _unpushed_counts(self) -> Counter:
        with self._count_lock:
            return _summed(self.unpushed)

    def push(self) -> None:
        """Push every count not yet in Redis (the background thread's round, and at exit). One push at
        a time, so an exit waits for the background thread's push to land; the counts of a push Redis
        refused wait for the next one."""
        with self._push_lock:
            with self._count_lock:
                common_counts = self._lexicon().take()
                taken, self.unpushed = [*self.unpushed, common_counts], []
            if not any(taken):
                return
            # One argument: packing thousands of tokens is what costs, not sending them.
            counts = json.dumps(_summed(taken))
            try:
                get_redis().eval(_PUSH_SCRIPT, 2, keys.COUNTS.format(ws=self.workspace_id), keys.COUNTING,
                                 self.workspace_id, counts)
            except RedisError:
                with self._count_lock:
                    self.unpushed[:0] = taken
                raise


# An id as Fathom and other tools print them: hex of 8 or more characters with a digit (a delta's, a
# commit's), or a UUID. Cited in answers ("[d39842a28e07e83e]"), never a concept.
_ID_RE = re.compile(r"(?=[a-f]*[0-9])[0-9a-f]{8,}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}")


def _never_a_concept(token: str) -> bool:
    """A token that is counted nowhere and never salient: one character (`s` of "user's", `i`), or an id."""
    return len(token) < 2 or _ID_RE.fullmatch(token) is not None


def _summed(counts_list) -> Counter:
    total = Counter()
    for counts in counts_list:
        total.update(counts)
    return total

