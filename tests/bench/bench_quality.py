"""The quality harness's figures (printed, nothing asserted on time).

    .venv/bin/python -m pytest tests/bench/bench_quality.py -s -q -o python_files='bench_*.py'

1. The swarm on the quality worker as `fathom up` starts it (threads): five specialists and the
   aggregator, each call 1.0 s of simulated model latency; wall time from the chord's send until
   the aggregate is recorded (ideal 2.0 s: five at once, then one).
2. Contrastive verification: three verifiers at 1.0 s each, the same way (ideal 1.0 s).
3. The harness's own overhead per fire with an instant (scripted) model, in this process: a
   SIMPLE chat fire's session ticks with the harness on (classifier, contract, verifier called in
   process, events, profile) against the same fire with it off, the two alternating; p50 and p90
   of the pairs' differences.
4. Model calls per role of that fire, and its database statements with the harness and without
   (the verifier's task and join, run in process here, counted with the harness)."""

import statistics
import subprocess
import time
import uuid

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from fathom import processes
from fathom.models import Workspace
from harness.fires.services import fire_create
from harness.quality import flow, swarm
from harness.quality.models import QualityAttempt, QualityRun
from tests.conftest import REPO_ROOT, percentile, stop_worker, wait_for, wait_for_worker, worker_env
from tests.harness.quality.conftest import Roles, verdict
from tests.harness.quality.test_flow import simple_chat_asked, verify_all
from tests.harness.support import session_tick

pytestmark = pytest.mark.django_db(transaction=True)

LATENCY = 1.0
OVERHEAD_FIRES = 30


@pytest.fixture
def quality_worker():
    name = f"bench-quality-{uuid.uuid4().hex[:6]}"
    argv = processes.quality_worker_argv(name=f"{name}@%h")
    argv[argv.index("--loglevel") + 1] = "WARNING"
    process = subprocess.Popen(argv, cwd=REPO_ROOT, env=worker_env(), stdin=subprocess.DEVNULL,
                               start_new_session=True)
    wait_for_worker(name, timeout=60)
    yield
    stop_worker(process)


def _run(workspace, **fields):
    fire = fire_create(workspace=workspace, mode="introspective", question="Compare the themes of the notes")
    return QualityRun.objects.create(workspace=workspace, fire=fire, **fields)


def test_swarm_and_contrastive_wall_time_on_the_quality_worker(workspace, quality_worker):
    roles = Roles(workspace)
    try:
        for _ in range(5):
            roles.specialist.reply("an angle's analysis", latency=LATENCY)
        roles.aggregator.reply("the merged brief", latency=LATENCY)
        run = _run(workspace, complexity={"level": "COMPLEX", "workflow_type": "synthesis"})
        started = time.perf_counter()
        with transaction.atomic():
            swarm.dispatch(run.fire, run, ["evidence", "patterns", "contradictions", "gaps", "implications"], [])
        wait_for(lambda: QualityRun.objects.filter(pk=run.pk, waiting_for="").exists(), timeout=60, every=0.01)
        swarm_wall = time.perf_counter() - started
        run.refresh_from_db()
        assert run.swarm["specialists_succeeded"] == 5 and run.swarm["aggregator_succeeded"]

        for _ in range(3):
            roles.verifier.reply(verdict(0.8), latency=LATENCY)
        run = _run(workspace, complexity={"level": "COMPLEX", "workflow_type": "synthesis"}, state="verifying")
        QualityAttempt.objects.create(workspace=workspace, run=run, number=1, response={"body": "an answer"},
                                      contract={"passed": True, "issues": []})
        started = time.perf_counter()
        with transaction.atomic():
            flow._verification_dispatch(run.fire, run, run.attempts.get(number=1))
        wait_for(lambda: QualityRun.objects.filter(pk=run.pk, waiting_for="").exists(), timeout=60, every=0.01)
        contrastive_wall = time.perf_counter() - started
        assert run.attempts.get(number=1).verifier["contrastive"]
    finally:
        roles.reset()
    print(f"\n[quality] swarm: 5 specialists + aggregator at {LATENCY:.1f} s each: {swarm_wall:.2f} s wall "
          f"(ideal {2 * LATENCY:.1f}, target <= 2.3)")
    print(f"[quality] contrastive: 3 verifiers at {LATENCY:.1f} s each: {contrastive_wall:.2f} s wall "
          f"(ideal {LATENCY:.1f}, target <= 1.3)")


def _one_fire(workspace, roles, *, quality: bool) -> float:
    session = simple_chat_asked(workspace, roles, quality=quality)
    started = time.perf_counter()
    if quality:
        assert session_tick(session_id=session.pk) == "parked"
        verify_all(QualityRun.objects.get(fire__session=session))
    assert session_tick(session_id=session.pk) == "ended"
    return time.perf_counter() - started


def test_quality_overhead_per_fire_with_an_instant_model():
    # The fires with and without the harness alternate, so a machine shared with other work slows both
    # alike; the overhead is each pair's difference.
    workspaces, roles = {}, {}
    for quality in (False, True):
        workspaces[quality] = Workspace.objects.create(slug=f"bench-{uuid.uuid4().hex[:8]}", name="bench")
        settings = flow.quality_settings_get(workspace_id=workspaces[quality].pk)
        settings.enabled = quality
        settings.save()
        roles[quality] = Roles(workspaces[quality])
    walls = {False: [], True: []}
    statements = {}
    try:
        for quality in (False, True):
            _one_fire(workspaces[quality], roles[quality], quality=quality)  # warm-up
            for script in roles[quality].scripts.values():
                script.reset()
        for _ in range(OVERHEAD_FIRES):
            for quality in (False, True):
                walls[quality].append(_one_fire(workspaces[quality], roles[quality], quality=quality))
        calls = {quality: {role: n // OVERHEAD_FIRES for role, n in roles[quality].calls().items()}
                 for quality in (False, True)}
        for quality in (False, True):
            with CaptureQueriesContext(connection) as counted:
                _one_fire(workspaces[quality], roles[quality], quality=quality)
            statements[quality] = len(counted.captured_queries)
    finally:
        for quality in (False, True):
            roles[quality].reset()
    off, on = statistics.median(walls[False]) * 1000, statistics.median(walls[True]) * 1000
    overhead = [(b - a) * 1000 for a, b in zip(walls[False], walls[True], strict=True)]
    print(f"\n[quality] SIMPLE chat fire with an instant model, {OVERHEAD_FIRES} fires each, alternating: p50 "
          f"{off:.1f} ms without the harness, {on:.1f} ms with it: overhead p50 {percentile(overhead, 50):.1f} ms, "
          f"p90 {percentile(overhead, 90):.1f} ms (target p50 <= 15 ms)")
    print(f"[quality] model calls per fire and role: with the harness {calls[True]}, without {calls[False]}")
    print(f"[quality] database statements per fire: {statements[True]} with the harness, {statements[False]} "
          f"without: {statements[True] - statements[False]} the harness's")
    assert calls[True] == {"classifier": 1, "main": 2, "verifier": 1} and calls[False] == {"main": 2}
