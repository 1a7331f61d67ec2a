"""Festinger's in-memory world model (seed 002, "In-Memory Cache Layer"), per process, per workspace.

`world(workspace_id)` is the workspace's `World`, loaded from PostgreSQL at first use. It holds the
seed's structures: `soas_by_token`, `soas_by_id`, `urd_by_concept`, `urd_by_concept_dim` and
`pending_conflicts` (here the (concept id, dimension id) pairs with a pending conflict, so the `?`
marks the contested dimension only). Reads touch nothing but these dicts and this process's own
socket buffer: the read path never waits for the network.

- Coherence. Every committed change to the graph ends in `note_write(workspace_id)` (festinger's
  services call it on commit), which publishes the workspace id on the `festinger:changes` channel.
  Every process is subscribed (`changes.py`); before each read it takes what Redis has delivered to its
  socket (a non-blocking look, no round trip) and a world named there reloads the graph (edges,
  pending conflicts, new concepts, configuration) before it answers. Redis writes the message to
  every subscriber in the same pass as it answers the publisher (microseconds apart, before the
  publisher can tell anyone), so a write in one process is seen by every other one at its next read.
  A subscription that drops is made again at the next read and marks every world stale: what was
  published meanwhile is lost. The reload is incremental (what was written since the last one), a
  full load only at first use and on the operator's reload.
- Encounter counts. Counting is in memory: the common words' in a `Lexicon` (festinger/wordscan.py,
  which counts them without a string each), the other tokens' per text, and those at once into
  `counted` (saliency needs them). A background thread per process (`background.py`) adds them to a Redis
  hash with HINCRBY every PUSH_SECONDS (atomic: many processes can count the same token); at process
  exit the rest is pushed (fathom.shutdown).
  The beat entry `maintenance.festinger_counts_flush` (every 30 s) moves the hash into PostgreSQL
  with `encounter_count = encounter_count + n`, never read-modify-write, and publishes the new totals;
  each process's background thread fetches them, so its view of a token's count includes what the
  others counted.

A workspace without a world (no WorldConfig row: never bootstrapped) is dormant: its model calls
are not enriched and its tokens not counted, since without the dictionary every English word would
look salient. Any fact, `fathom festinger bootstrap` or the admin bootstraps it.

The parts: `model.py` (a World: the structures, loading, counting, the push), `registry.py` (this
process's worlds, kept current; the first one starts the process's background work), `changes.py` (the
subscription to the changes channel), `background.py` (the thread), `flush.py` (Redis -> PostgreSQL),
`keys.py` (the Redis keys they share). Importing any of them starts no thread and registers nothing.
"""

from festinger.cache.background import PUSH_SECONDS, background_stop
from festinger.cache.flush import FLUSH_TASK, counts_flush, counts_flush_schedule_ensure
from festinger.cache.model import WRITE_RETRY_SECONDS, Settings, SoasRow, UrdEdge, World, saliency
from festinger.cache.registry import forget, held, note_write, push_all, world, world_held, world_reload

__all__ = [
    "FLUSH_TASK", "PUSH_SECONDS", "WRITE_RETRY_SECONDS", "Settings", "SoasRow", "UrdEdge", "World",
    "background_stop", "counts_flush", "counts_flush_schedule_ensure", "forget", "held", "note_write",
    "push_all", "saliency", "world", "world_held", "world_reload",
]
