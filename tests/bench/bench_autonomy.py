"""Autonomy's hot paths: the pressure of a workspace with 100,000 deltas (target p95 <= 50 ms) and
one beat sweep over 100 workspaces (target <= 1 s). Prints figures and ratios to the targets;
asserts no timing.

    .venv/bin/python -m pytest tests/bench/bench_autonomy.py -s -q -o python_files='bench_*.py'

The lake is written with SQL (the bench measures reads): moments over 60 days, one level-1
provenance every 500 moments, mood shifts, Q/A markers repeating a few questions, directives."""

import os
import statistics
import time

import pytest
from django.db import connection
from django.utils import timezone

from fathom.models import Workspace
from harness.autonomy.pressure import pressure_read
from harness.autonomy.services import autonomy_settings_get, autonomy_sweep
from lake.models import Delta

N = int(os.environ.get("AUTONOMY_BENCH_DELTAS", "100000"))
WORKSPACES = int(os.environ.get("AUTONOMY_BENCH_WORKSPACES", "100"))
SMALL = int(os.environ.get("AUTONOMY_BENCH_SMALL_DELTAS", "500"))
READS, SWEEPS = 200, 5
TARGETS = {"pressure_p95_ms": 50.0, "sweep_s": 1.0}

pytestmark = pytest.mark.slow


def test_pressure_and_sweep_at_scale(db):
    big = Workspace.objects.create(slug="bench-big")
    _fill(big, N)
    smalls = [Workspace.objects.create(slug=f"bench-{i}") for i in range(WORKSPACES - 1)]
    for workspace in smalls:
        _fill(workspace, SMALL)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Delta._meta.db_table}")
    settings = autonomy_settings_get(workspace=big)
    day_start = timezone.now().replace(hour=0, minute=0)
    timings = []
    for _ in range(READS):
        started = time.perf_counter()
        reading = pressure_read(settings=settings, day_start=day_start)
        timings.append((time.perf_counter() - started) * 1000)
    p50, p95 = statistics.median(timings), statistics.quantiles(timings, n=20)[18]
    print(f"\npressure at {N:,} deltas: p50 {p50:.1f} ms, p95 {p95:.1f} ms "
          f"({p95 / TARGETS['pressure_p95_ms']:.2f} of the target); value {reading.value}")
    print({name: entry["raw"] for name, entry in reading.breakdown.items()})
    sweeps = []
    for _ in range(SWEEPS):
        started = time.perf_counter()
        counts = autonomy_sweep()
        sweeps.append(time.perf_counter() - started)
    print(f"sweep over {WORKSPACES} workspaces: median {statistics.median(sweeps):.3f} s, max {max(sweeps):.3f} s "
          f"({statistics.median(sweeps) / TARGETS['sweep_s']:.2f} of the target); {counts}; "
          f"load average {os.getloadavg()[0]:.1f} (the CPU is shared)")
    assert sum(counts.values()) == WORKSPACES


def _fill(workspace, count: int) -> None:
    """`count` deltas over the last 60 days: moments, a level-1 provenance every 500, a mood shift
    every 200, a Q/A marker every 100 (ten questions), a directive every 1,000."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Delta._meta.db_table} (id, workspace_id, created_at, source, tags, content, media_hash,
                                                embedding_model)
            SELECT substr(md5(%s || '-' || g), 1, 16), %s,
                   now() - (interval '60 days') * (1 - g::float / %s), 'bench',
                   CASE WHEN g %% 1000 = 0 THEN ARRAY['kind:directive']
                        WHEN g %% 500 = 0 THEN ARRAY['kind:provenance', 'provenance-level:1',
                                                     'from:' || substr(md5(%s || '-' || (g - 1)), 1, 16)]
                        WHEN g %% 200 = 0 THEN ARRAY['kind:mood-shift']
                        WHEN g %% 100 = 0 THEN ARRAY['kind:provenance', 'kind:qa-marker', 'provenance-level:0']
                        ELSE ARRAY['kind:note'] END::varchar[],
                   CASE WHEN g %% 200 = 0 AND g %% 500 <> 0 THEN '+0.1 curiosity: bench'
                        WHEN g %% 100 = 0 THEN 'question ' || (g / 100 %% 10)
                        ELSE 'moment ' || g || ' of the bench lake' END,
                   '', ''
            FROM generate_series(1, %s) AS g
            """, [workspace.slug, workspace.pk, count, workspace.slug, count])
