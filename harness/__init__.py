"""The harness apps: runtime, fires, quality, conductor and autonomy, each a Django app of its own
(docs/architecture.md). The `harness` app itself is installed only for its historical migrations
(0001-0010 create the tables, 0011 hands them to the apps)."""
