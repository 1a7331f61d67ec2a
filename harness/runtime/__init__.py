"""The runtime (seed 003): sessions, triggers, turns, profiles and the session event stream.

A session takes triggers (user messages, task completions, heartbeats, cron, profile refreshes);
a tick claims the session in the database, snapshots the queued triggers into a turn, runs the
turn's work and ends it. Triggers that arrive during a turn wait for the next one."""
