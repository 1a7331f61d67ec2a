"""The world model's write side against PostgreSQL: bootstrapping a workspace, facts placed through
the collision check (new edges, confirmations, collisions queued), the same under 4 threads each on
its own connection, and conflicts applied by the resolution job's applicator. Prints figures only.

    make bench   (or: .venv/bin/python -m pytest tests/bench/bench_festinger_world.py -s -q -o python_files='bench_*.py')
"""

import functools
import statistics
import time
import uuid

import pytest

from fathom.models import Workspace
from festinger.models import Conflict, Edge
from festinger.resolution import conflict_apply
from festinger.services import insert_fact, world_ensure
from tests.conftest import run_at_once

FACTS = 2_000
THREADS = 4


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _timed(calls):
    times = []
    for call in calls:
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return times


def _report(name: str, times: list[float]) -> None:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(f"{name:<44} n={len(times):>5}  p50 {_ms(statistics.median(times)):>9}  p99 {_ms(p99):>9}  "
          f"{len(times) / sum(times):>8.0f}/s")


@pytest.mark.django_db(transaction=True)
def test_bench_world_writes():
    workspace = Workspace.objects.create(slug=f"bench-{uuid.uuid4().hex[:8]}")
    started = time.perf_counter()
    world_ensure(workspace=workspace)
    print(f"\nbootstrap (6 dimensions, 10,901 dictionary words, configuration, beat entry): "
          f"{_ms(time.perf_counter() - started)}")

    def fact(i, parent="parent"):
        return lambda: insert_fact(workspace=workspace, concept=f"concept{i}", parent=f"{parent}{i % 50}",
                                   dimension="type", is_isa=True, confidence=0.8, source="inferred")

    _report("insert_fact, new edge", _timed(fact(i) for i in range(FACTS)))
    _report("insert_fact, same fact again (confirmation)", _timed(fact(i) for i in range(FACTS)))
    _report("insert_fact, collision queued as a conflict", _timed(fact(i, "other") for i in range(FACTS)))
    assert Conflict.objects.filter(workspace=workspace, status="pending").count() == FACTS

    per_thread: list[list[float]] = [[] for _ in range(THREADS)]

    def racer(index):
        # every thread races for the same (concept, type) slots with its own parent
        per_thread[index] = _timed(
            (lambda i=i: insert_fact(workspace=workspace, concept=f"race{i}", parent=f"p{index}",
                                     dimension="type", is_isa=True, confidence=0.8,
                                     source="inferred")) for i in range(FACTS // THREADS))

    started = time.perf_counter()
    assert run_at_once([functools.partial(racer, index) for index in range(THREADS)]) == []
    wall = time.perf_counter() - started
    _report(f"insert_fact, {THREADS} threads racing per slot", [t for times in per_thread for t in times])
    print(f"{'':<44} wall {wall:.2f} s for {FACTS // THREADS * THREADS} facts: "
          f"{FACTS // THREADS * THREADS / wall:.0f}/s overall")
    held = Edge.objects.filter(workspace=workspace, concept__token__startswith="race").count()
    queued = Conflict.objects.filter(workspace=workspace, concept__token__startswith="race").count()
    print(f"{'':<44} {held} edges held, {queued} conflicts queued (one winner per slot)")
    assert held == FACTS // THREADS and queued == held * (THREADS - 1)

    pending = list(Conflict.objects.filter(workspace=workspace, concept__token__startswith="concept")
                   .values_list("pk", flat=True)[:500])
    _report("conflict_apply decompose (move + insert + history)", _timed(
        (lambda pk=pk: conflict_apply(conflict_id=pk, decision={
            "decision": "decompose", "existing_dimension": "artifact-type", "new_dimension": "deployment-type"},
            actor="bench")) for pk in pending))
