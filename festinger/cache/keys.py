"""The Redis keys Festinger's cache shares between processes (and with the flush)."""

CHANGES = "festinger:changes"         # a workspace id per committed graph write
COUNTS = "festinger:{ws}:counts"      # token -> count pushed by processes, waiting for the flush
DRAINING = "festinger:{ws}:counts:draining"
DRAINING_ID = "festinger:{ws}:counts:draining:id"
TOTALS = "festinger:{ws}:totals"      # token -> "<concept id>:<encounter_count>:<last_seen epoch>" as of the last flush
FLUSHED = "festinger:{ws}:flushed"    # bumped by every flush
COUNTING = "festinger:counting"       # workspaces that ever pushed counts
FLUSH_LOCK = "festinger:flush:lock"
