"""Festinger's in-memory world model (seed 002, "In-Memory Cache Layer"), per process, per workspace.

`world(workspace_id)` is the workspace's `World`, loaded from PostgreSQL at first use. It holds the
seed's structures: `soas_by_token`, `soas_by_id`, `urd_by_concept`, `urd_by_concept_dim` and
`pending_conflicts` (here the (concept id, dimension id) pairs with a pending conflict, so the `?`
marks the contested dimension only). Reads touch nothing but these dicts and this process's own
socket buffer: the read path never waits for the network.

- Coherence. Every committed change to the graph ends in `note_write(workspace_id)` (festinger's
  services call it on commit), which publishes the workspace id on the `festinger:changes` channel.
  Every process is subscribed (`_Changes`); before each read it takes what Redis has delivered to its
  socket (a non-blocking look, no round trip) and a world named there reloads the graph (edges,
  pending conflicts, new concepts, configuration) before it answers. Redis writes the message to
  every subscriber in the same pass as it answers the publisher (microseconds apart, before the
  publisher can tell anyone), so a write in one process is seen by every other one at its next read.
  A subscription that drops is made again at the next read and marks every world stale: what was
  published meanwhile is lost. The reload is incremental (what was written since the last one), a
  full load only at first use and on the operator's reload.
- Encounter counts. Counting is in memory: the common words' in a `Lexicon` (festinger/_words.c,
  which counts them without a string each), the other tokens' per text, and those at once into
  `counted` (saliency needs them). A background thread per process (`_background`) adds them to a Redis
  hash with HINCRBY every PUSH_SECONDS (atomic: many processes can count the same token); at process
  exit the rest is pushed.
  The beat entry `maintenance.festinger_counts_flush` (every 30 s) moves the hash into PostgreSQL
  with `encounter_count = encounter_count + n`, never read-modify-write, and publishes the new totals;
  each process's background thread fetches them, so its view of a token's count includes what the
  others counted.

A workspace without a world (no WorldConfig row: never bootstrapped) is dormant: its model calls
are not enriched and its tokens not counted, since without the dictionary every English word would
look salient. Any fact, `fathom festinger bootstrap` or the admin bootstraps it.
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass

from celery import signals
from django.db import connection, transaction
from redis.exceptions import RedisError

from fathom.redis_client import get_redis
from festinger.text import normalise
from festinger.wordscan import Lexicon

log = logging.getLogger(__name__)

PUSH_SECONDS = 5.0          # how long counts may wait in a process before they go to Redis
DORMANT_RECHECK_SECONDS = 30.0
WRITE_RETRY_SECONDS = 600.0  # a concept whose write came to nothing is asked about again after this
FLUSH_LOCK_SECONDS = 120

_CHANGES = "festinger:changes"         # a workspace id per committed graph write
_COUNTS = "festinger:{ws}:counts"      # token -> count pushed by processes, waiting for the flush
_DRAINING = "festinger:{ws}:counts:draining"
_DRAINING_ID = "festinger:{ws}:counts:draining:id"
_TOTALS = "festinger:{ws}:totals"      # token -> "<concept id>:<encounter_count>" as of the last flush
_FLUSHED = "festinger:{ws}:flushed"    # bumped by every flush
_COUNTING = "festinger:counting"       # workspaces that ever pushed counts
_FLUSH_LOCK = "festinger:flush:lock"
# An incremental reload also reads what changed this long before the previous one: a transaction that
# wrote earlier but committed after that reload is still seen.
RELOAD_MARGIN_SECONDS = 120

_CONCEPTS_SQL = "SELECT id, token, encounter_count, novelty, is_common FROM festinger_concept"
_EDGES_SQL = ("SELECT e.concept_id, e.parent_id, e.dimension_id, e.is_isa, e.confidence, "
              "extract(epoch FROM e.last_confirmed)::float8, e.source FROM festinger_edge e")

_PUSH_SCRIPT = """
for token, n in pairs(cjson.decode(ARGV[2])) do redis.call('HINCRBY', KEYS[1], token, n) end
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""
# Take what was pushed as a batch named ARGV[1] (unless a failed flush left a batch behind, which goes
# first): {batch id, token, n, token, n, ...}.
_DRAIN_SCRIPT = """
if redis.call('EXISTS', KEYS[2]) == 0 then
  if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('DEL', KEYS[3])
end
redis.call('SET', KEYS[3], ARGV[1], 'NX')
local batch = redis.call('HGETALL', KEYS[2])
table.insert(batch, 1, redis.call('GET', KEYS[3]))
return batch
"""


@dataclass(slots=True)
class SoasRow:
    """A concept as the cache holds it; `encounter_count` is PostgreSQL's as last seen here."""

    id: int
    token: str
    encounter_count: int
    novelty: float
    is_common: bool


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

    @property
    def read_count(self) -> float:
        """Saliency is ln(encounter_count): the count at which a concept reaches the read threshold."""
        return math.exp(self.read_threshold)

    @property
    def write_count(self) -> float:
        return math.exp(self.write_threshold)


def saliency(count: int) -> float:
    """The seed's log-scaled encounter saliency: ln(count), 0 for a first encounter (Test A: log(1))."""
    return math.log(count) if count > 1 else 0.0


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
            self.unpushed.append(others)
        counted, get = self.counted, self.counted.get  # not counted[token] += n: Counter's __missing__ is Python
        for token, n in others.items():
            counted[token] = get(token, 0) + n
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
        return set().union(*token_lists).difference(self.common)

    def encounters(self, token: str) -> int:
        row = self.soas_by_token.get(token)
        return (row.encounter_count if row is not None else 0) + self.counted.get(token, 0)

    def saliency(self, token: str) -> float:
        if token in self.common:
            return 0.0
        return saliency(self.encounters(token))

    def salient(self, candidates) -> list[tuple[str, float]]:
        """(token, saliency) for the distinct candidates (from `count` or `candidates`) at or above the
        read threshold, most salient first."""
        threshold = self.settings.read_count
        found = []
        rows, counted = self.soas_by_token.get, self.counted.get
        for token in candidates:
            row = rows(token)
            n = (row.encounter_count if row is not None else 0) + counted(token, 0)
            if n >= threshold:
                found.append((token, saliency(n)))
        found.sort(key=lambda pair: -pair[1])
        return found

    def to_write(self, salient: list[tuple[str, float]]) -> list[str]:
        """The salient tokens that crossed the write threshold and were never written (novelty 0),
        each returned once per process every WRITE_RETRY_SECONDS (a write that failed or got lost is
        asked again; the writer's lock keeps two from running at once)."""
        threshold = self.settings.write_threshold
        now = time.monotonic()
        found = []
        for token, value in salient:
            if value < threshold or now - self.write_requested.get(token, -WRITE_RETRY_SECONDS) < WRITE_RETRY_SECONDS:
                continue
            row = self.soas_by_token.get(token)
            if row is None or row.novelty == 0:
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
        from festinger.models import WorldConfig

        config = WorldConfig.objects.filter(workspace_id=self.workspace_id).first()
        if config is not None:
            self.settings = Settings(
                read_threshold=config.saliency_read_threshold, write_threshold=config.saliency_write_threshold,
                confidence_floor=config.recollection_confidence_floor,
                recency_days=config.recollection_recency_days, max_concepts=config.recollection_max_concepts,
                writer_role=config.writer_role, resolver_role=config.resolver_role)

    def _refresh_counts(self, totals: dict[str, str]) -> None:
        """Take the totals of the last flush: the counts every process pushed until then."""
        unpushed = self._unpushed_counts()
        for token, total in totals.items():
            pk, count = (int(part) for part in total.split(":"))
            row = self.soas_by_token.get(token)
            if row is None:  # first flushed since the load
                self._add_row(SoasRow(pk, token, count, 0.0, False))
            else:
                row.encounter_count = count
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
                get_redis().eval(_PUSH_SCRIPT, 2, _COUNTS.format(ws=self.workspace_id), _COUNTING,
                                 self.workspace_id, counts)
            except RedisError:
                with self._count_lock:
                    self.unpushed[:0] = taken
                raise


def _summed(counts_list) -> Counter:
    total = Counter()
    for counts in counts_list:
        total.update(counts)
    return total


# --- the registry of this process's worlds ---------------------------------------------------------

_worlds: dict[int, World] = {}
_dormant: dict[int, float] = {}    # workspace id -> when to look again
_registry_lock = threading.Lock()


def world(workspace_id: int) -> World | None:
    """The workspace's World, synced with every other process; None while the workspace is dormant."""
    _changes_take()
    found = _worlds.get(workspace_id)
    if found is None:
        found = _load(workspace_id)
        if found is None:
            return None
    found.sync()
    return found


def _load(workspace_id: int) -> World | None:
    from festinger.models import WorldConfig

    if _dormant.get(workspace_id, 0) > time.monotonic():
        return None
    with _registry_lock:
        if workspace_id in _worlds:
            return _worlds[workspace_id]
        if not WorldConfig.objects.filter(workspace_id=workspace_id).exists():
            _dormant[workspace_id] = time.monotonic() + DORMANT_RECHECK_SECONDS
            return None
        _dormant.pop(workspace_id, None)
        loaded = World(workspace_id)
        loaded.flushed = get_redis().get(_FLUSHED.format(ws=workspace_id))
        loaded.load()  # after subscribing (`world`): a write committed from here on is heard of
        _worlds[workspace_id] = loaded
        return loaded


def held(workspace_id: int) -> World | None:
    """The workspace's World if this process holds one, as it is: never loaded or synced for the asking."""
    return _worlds.get(workspace_id)


def note_write(workspace_id: int) -> None:
    """A write to the workspace's graph committed: every process reloads before its next read."""
    get_redis().publish(_CHANGES, workspace_id)
    _changed(workspace_id)


def world_reload(workspace_id: int) -> World | None:
    """The operator's reload: this process reloads everything now, every other one before its next read."""
    note_write(workspace_id)
    loaded = _worlds.get(workspace_id)
    if loaded is None:
        return world(workspace_id)
    loaded.stale = False
    loaded.load()
    return loaded


def _changed(workspace_id: int) -> None:
    found = _worlds.get(workspace_id)
    if found is not None:
        found.stale = True
    _dormant.pop(workspace_id, None)


class _Changes:
    """This process's subscription to the changes channel. `take` reads what Redis has delivered to
    the socket without waiting for more, and marks the worlds it names stale."""

    def __init__(self):
        self.pid = os.getpid()
        self.pubsub = None
        self.lock = threading.Lock()

    def take(self) -> None:
        with self.lock:
            try:
                self._take()
            except RedisError:  # the connection dropped: subscribe again (everything reloads), once
                self.pubsub.close()
                self.pubsub = None
                self._take()

    def _take(self) -> None:
        if self.pubsub is None:
            self.pubsub = get_redis().pubsub()
            self.pubsub.subscribe(_CHANGES)
            # Wait for the confirmation: from then on no write goes unheard.
            self._apply(self.pubsub.get_message(timeout=5))
        while (message := self.pubsub.get_message(timeout=0.0)) is not None:
            self._apply(message)

    @staticmethod
    def _apply(message) -> None:
        if message is None:
            raise RedisError("festinger: Redis did not confirm the subscription to the changes channel")
        if message["type"] == "subscribe":
            # The first subscription, or one after the connection dropped: what was published before is lost.
            for found in list(_worlds.values()):
                found.stale = True
        elif message["type"] == "message":
            _changed(int(message["data"]))


_changes: _Changes | None = None
_stopping = threading.Event()


def _changes_take() -> None:
    """Take the changes delivered to this process; the first call in a process (a forked worker child
    included) subscribes and starts its background thread."""
    global _changes
    if _changes is None or _changes.pid != os.getpid():
        with _registry_lock:
            if _changes is None or _changes.pid != os.getpid():
                _changes = _Changes()
                threading.Thread(target=_background, name="festinger-background", daemon=True).start()
    _changes.take()


def _background() -> None:
    """Every PUSH_SECONDS until `background_stop`: push this process's counts to Redis, fetch the
    totals of a flush for the worlds to take at their next read, and read the changes channel (an idle
    process's socket does not fill up). Never on the read path."""
    unreachable = False
    while not _stopping.wait(PUSH_SECONDS):
        try:
            _background_round()
        except RedisError as exc:  # counts wait in memory until Redis is back; said once, not every round
            if not unreachable:
                log.warning("festinger: Redis unreachable (%s); counts kept until it is back", exc)
            unreachable = True
            continue
        except Exception:
            log.exception("festinger: pushing counts or fetching totals failed; next try in %s s", PUSH_SECONDS)
        if unreachable:
            log.info("festinger: Redis reachable again; counts pushed")
            unreachable = False


def background_stop() -> None:
    """Stop this process's background thread after its round: at exit (the counts left are pushed by
    `push_all`), and before a test run stops its Redis."""
    _stopping.set()


def _background_round() -> None:
    worlds = list(_worlds.values())
    if not worlds:
        return
    for found in worlds:
        found.push()
    redis = get_redis()
    for found, flushed in zip(worlds, redis.mget([_FLUSHED.format(ws=w.workspace_id) for w in worlds]),
                              strict=True):
        if flushed != found.flushed:
            found.staged_totals = redis.hgetall(_TOTALS.format(ws=found.workspace_id))
            found.flushed = flushed
    _changes.take()


def forget(workspace_id: int | None = None) -> None:
    """Drop cached worlds (all of them by default), pushing their counts first."""
    for pk in list(_worlds) if workspace_id is None else [workspace_id]:
        found = _worlds.pop(pk, None)
        if found is not None:
            found.push()
        _dormant.pop(pk, None)


def push_all() -> None:
    """Push every world's unpushed counts to Redis: at process exit, so no count is lost."""
    for found in list(_worlds.values()):
        try:
            found.push()
        except Exception:  # exiting: Redis may be gone; say so rather than fail the exit
            log.exception("festinger: could not push the counts of workspace %s", found.workspace_id)


atexit.register(push_all)
atexit.register(background_stop)  # runs first: exit handlers run last-registered first


@signals.worker_process_shutdown.connect
def _push_at_worker_exit(**_kwargs):
    push_all()


# --- the flush: Redis -> PostgreSQL (the beat entry's work) -----------------------------------------

_UPSERT = """
INSERT INTO festinger_concept (workspace_id, token, encounter_count, last_seen, saliency, novelty, is_common,
                               created_at)
SELECT %s, t.token, t.n, now(), CASE WHEN t.n > 1 THEN ln(t.n::float8) ELSE 0 END, 0, false, now()
FROM unnest(%s::text[], %s::bigint[]) AS t(token, n)
ON CONFLICT (workspace_id, token) DO UPDATE SET
    encounter_count = festinger_concept.encounter_count + EXCLUDED.encounter_count,
    last_seen = EXCLUDED.last_seen,
    saliency = CASE
        WHEN festinger_concept.is_common AND NOT EXISTS (
            SELECT 1 FROM festinger_edge e WHERE e.concept_id = festinger_concept.id AND e.parent_id <> e.concept_id)
        THEN 0
        ELSE ln(greatest(festinger_concept.encounter_count + EXCLUDED.encounter_count, 1)::float8) END
RETURNING token, id, encounter_count
"""


def counts_flush() -> dict[int, int]:
    """Add every workspace's pushed counts to PostgreSQL; returns {workspace id: tokens flushed}.
    One flush at a time (a Redis lock). A batch is added once: its id is recorded in the same
    transaction (WorldConfig.counts_batch), so a flush that died after the commit and before Redis
    deleted the batch finds it added and only publishes its totals."""
    from festinger.models import TOKEN_MAX_LENGTH

    redis = get_redis()
    if not redis.set(_FLUSH_LOCK, "1", nx=True, ex=FLUSH_LOCK_SECONDS):
        return {}
    flushed = {}
    try:
        for member in redis.smembers(_COUNTING):
            workspace_id = int(member)
            keys = {"ws": workspace_id}
            raw = redis.eval(_DRAIN_SCRIPT, 3, _COUNTS.format(**keys), _DRAINING.format(**keys),
                             _DRAINING_ID.format(**keys), uuid.uuid4().hex)
            if not raw:
                continue
            batch_id, pairs = raw[0], raw[1:]
            batch = {token: int(n) for token, n in zip(pairs[::2], pairs[1::2], strict=True)
                     if len(token) <= TOKEN_MAX_LENGTH}
            totals = _batch_add(workspace_id, batch_id, batch) if batch else {}
            pipe = redis.pipeline()
            pipe.delete(_DRAINING.format(**keys), _DRAINING_ID.format(**keys), _TOTALS.format(**keys))
            if totals:
                pipe.hset(_TOTALS.format(**keys), mapping=totals)
            pipe.incr(_FLUSHED.format(**keys))
            pipe.execute()
            flushed[workspace_id] = len(totals)
    finally:
        redis.delete(_FLUSH_LOCK)
    return flushed


def _batch_add(workspace_id: int, batch_id: str, batch: dict[str, int]) -> dict[str, str]:
    """Add the batch's counts unless it was added already; token -> "<concept id>:<count>" either way
    (nothing for a workspace without a world)."""
    tokens = sorted(batch)  # one lock order for concurrent upserts
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE festinger_worldconfig SET counts_batch = %s "
                       "WHERE workspace_id = %s AND counts_batch <> %s", [batch_id, workspace_id, batch_id])
        if cursor.rowcount:
            cursor.execute(_UPSERT, [workspace_id, tokens, [batch[t] for t in tokens]])
        else:
            cursor.execute("SELECT token, id, encounter_count FROM festinger_concept "
                           "WHERE workspace_id = %s AND token = ANY(%s)", [workspace_id, tokens])
        return {token: f"{pk}:{count}" for token, pk, count in cursor.fetchall()}


# --- the beat entry ---------------------------------------------------------------------------------

FLUSH_TASK = "maintenance.festinger_counts_flush"


def counts_flush_schedule_ensure(**models):
    from fathom.schedules import interval_task_ensure

    return interval_task_ensure(
        task=FLUSH_TASK, every_seconds=30, **models,
        description="Every 30 s: adds the encounter counts every process pushed to Redis to Festinger's "
                    "concepts in PostgreSQL (encounter_count + n), and publishes the totals.")
