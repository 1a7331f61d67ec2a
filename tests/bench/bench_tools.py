"""The lens tools over a large lake: 100,000 deltas over 90 days (ten kinds, topic and contact tags,
citations, drops, feed engagement and provenance pointing at other deltas), each lens action run
as a fire runs it (the tool with its context), in process. Prints p50 / p95 per action; never asserts
a timing. Run with `make bench`."""

import os
import statistics
import time

import pytest
from django.db import connection

from harness.fires.services import fire_create
from harness.fires.tools import REGISTRY, ToolContext
from harness.fires.tools.base import tools_for
from lake.selectors import orient_current

DELTAS = 100_000
RUNS = 15


def _load_lake(workspace) -> None:
    """Bulk insert in SQL: every 20th delta affirms an earlier one, every 50th refutes one, every
    100th is an L1 provenance over two earlier ones, every 200th is feed engagement."""
    with connection.cursor() as cursor:
        cursor.execute("""
            INSERT INTO lake_delta (id, workspace_id, created_at, source, tags, content, media_hash, embedding_model)
            SELECT lpad(to_hex(i), 16, '0'), %s, now() - (i * interval '90 days' / %s),
                   'source-' || (i %% 7),
                   ARRAY['kind:' || (ARRAY['note','card','log','mail','photo','task','idea','meal','walk','chat'])[i %% 10 + 1],
                         'topic:t' || (i %% 40), 'contact:c' || (i %% 25)]::varchar[]
                   || CASE WHEN i %% 20 = 0 THEN ARRAY['kind:engagement-attest', 'affirms:' || lpad(to_hex(i + 7), 16, '0'),
                                                     'fire:f' || (i %% 300)]::varchar[] ELSE '{}' END
                   || CASE WHEN i %% 50 = 0 THEN ARRAY['kind:engagement-attest', 'refutes:' || lpad(to_hex(i + 3), 16, '0'),
                                                     'fire:f' || (i %% 300)]::varchar[] ELSE '{}' END
                   || CASE WHEN i %% 100 = 0 THEN ARRAY['kind:provenance', 'provenance-level:1',
                                                      'from:' || lpad(to_hex(i + 11), 16, '0'),
                                                      'from:' || lpad(to_hex(i + 13), 16, '0')]::varchar[] ELSE '{}' END
                   || CASE WHEN i %% 200 = 0 THEN ARRAY['engagement:more', 'target:' || lpad(to_hex(i + 5), 16, '0')]::varchar[]
                      ELSE '{}' END,
                   CASE WHEN i %% 20 = 0 THEN 'affirms ' || lpad(to_hex(i + 7), 16, '0')
                        WHEN i %% 50 = 0 THEN 'refutes ' || lpad(to_hex(i + 3), 16, '0')
                        ELSE 'moment ' || i || ' about topic t' || (i %% 40) END,
                   '', ''
            FROM generate_series(1, %s) AS i""", [workspace.pk, DELTAS, DELTAS])
        cursor.execute("ANALYZE lake_delta")


CALLS = [
    ("state", {"action": "recent"}),
    ("state", {"action": "mood"}),
    ("state", {"action": "crystal"}),
    ("pattern", {"action": "tagged", "tags": ["topic:t7"]}),
    ("pattern", {"action": "count_by", "by": "kind", "days": 30}),
    ("pattern", {"action": "count_by", "by": "topic"}),
    ("pattern", {"action": "salient_recent", "days": 7}),
    ("pattern", {"action": "dormant", "by": "contact", "days": 2}),
    ("time", {"action": "between", "since": "3d", "until": "2d"}),
    ("time", {"action": "bucket_by", "unit": "day", "days": 90}),
    ("time", {"action": "around", "delta_id": "0000000000000064", "minutes": 600}),
    ("relate", {"action": "with_contact", "contact": "c3"}),
    ("relate", {"action": "engagement"}),
    ("relate", {"action": "engagement", "delta_id": "000000000000001b"}),
    ("relate", {"action": "dropped_around", "delta_id": "0000000000000064"}),
    ("relate", {"action": "cited_by", "delta_id": "000000000000001b"}),
    ("relate", {"action": "link", "delta_id": "000000000000006f", "other_id": "0000000000000071"}),
]


@pytest.mark.django_db
def test_lens_actions_over_100k_deltas(workspace):
    started = time.perf_counter()
    _load_lake(workspace)
    loaded_in = time.perf_counter() - started
    tools_for(phase="main")
    fire = fire_create(workspace=workspace, mode="introspective", question="bench")
    print(f"\nLens actions over {DELTAS:,} deltas (bulk insert {loaded_in:.1f} s), {RUNS} runs each, in process:")
    for number, (name, args) in enumerate(CALLS):
        ctx = ToolContext(fire=fire, turn_number=1, call_id=f"bench-{number}")
        result = REGISTRY[name].run(ctx, dict(args))
        assert not result.startswith("error"), result
        timings = []
        for _ in range(RUNS):
            began = time.perf_counter()
            REGISTRY[name].run(ctx, dict(args))
            timings.append((time.perf_counter() - began) * 1000)
        timings.sort()
        p95 = timings[min(len(timings) - 1, round(0.95 * (len(timings) - 1)))]
        shown = ", ".join(f"{k}={v}" for k, v in args.items() if k != "action")
        print(f"  {name:7s} {args['action']:15s} p50 {statistics.median(timings):8.2f} ms  p95 {p95:8.2f} ms  "
              f"{len(result):6,} chars  {shown[:60]}")
    timings = []
    for _ in range(RUNS):
        began = time.perf_counter()
        orient_current(workspace=workspace, river="session:bench", before=fire.created_at)
        timings.append((time.perf_counter() - began) * 1000)
    print(f"  the orient read into every turn's system message: p50 {statistics.median(timings):.2f} ms")
    print(f"  host load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
