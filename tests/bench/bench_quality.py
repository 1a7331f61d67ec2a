"""The quality harness's figures (printed, nothing asserted on time).

    .venv/bin/python -m pytest tests/bench/bench_quality.py -s -q -o python_files='bench_*.py'

1. The swarm on the quality worker as `fathom up` starts it (threads): five specialists and the
   aggregator, each call 1.0 s of simulated model latency; wall time from the chord's send until
   the aggregate is recorded (ideal 2.0 s: five at once, then one).
2. Contrastive verification: three verifiers at 1.0 s each, the same way (ideal 1.0 s).
3. The harness's own overhead per fire with an instant (scripted) model, in this process: a
   SIMPLE chat fire with the harness on (its session's tick, in a tracing scope of its own as a
   worker runs a task: classifier, contract, the lone verifier called in the same run, events,
   profile) against the same fire with it off, alternating; p50 and p95 of the rounds' differences,
   by the wall clock and in this process's CPU time.
4. Model calls per role of that fire, and its database statements with the harness and without."""

import statistics
import subprocess
import time
import uuid

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from fathom import processes
from fathom.models import Workspace
from fathom.tracing.spans import scope as tracing_scope
from harness.fires.services import fire_create
from harness.quality import configuration, postflight, swarm, verification
from harness.quality.events import emitting
from harness.quality.models import QualityAttempt, QualityRun
from harness.runtime.services import session_create
from tests.conftest import REPO_ROOT, percentile, stop_worker, wait_for, wait_for_worker, worker_env
from tests.harness.quality.conftest import Roles, simple_chat_asked, verdict
from tests.harness.support import session_tick

pytestmark = pytest.mark.django_db(transaction=True)

LATENCY = 1.0
OVERHEAD_FIRES = 100  # at 30 fires each way, the p50 of the differences moved by more than the changes measured


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
        with transaction.atomic(), emitting(run.fire, run, runner=False) as step:
            swarm.dispatch(step, ["evidence", "patterns", "contradictions", "gaps", "implications"], [])
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
            token = postflight._verifier_awaited(run)
            verification.verification_send(run_id=run.pk, attempt=1, token=token, perspectives=verification.perspectives_for(run),
                                   brief=verification.verifier_brief(run.fire, {"body": "an answer"}))
        wait_for(lambda: QualityRun.objects.filter(pk=run.pk, waiting_for="").exists(), timeout=60, every=0.01)
        contrastive_wall = time.perf_counter() - started
        assert run.attempts.get(number=1).verifier["contrastive"]
    finally:
        roles.reset()
    print(f"\n[quality] swarm: 5 specialists + aggregator at {LATENCY:.1f} s each: {swarm_wall:.2f} s wall "
          f"(ideal {2 * LATENCY:.1f}, target <= 2.3)")
    print(f"[quality] contrastive: 3 verifiers at {LATENCY:.1f} s each: {contrastive_wall:.2f} s wall "
          f"(ideal {LATENCY:.1f}, target <= 1.3)")


def _one_fire(workspace, roles, *, quality: bool) -> tuple[float, float]:
    """One fire's session tick, timed, in a tracing scope of its own as a worker runs a task (its trace
    events written in one statement at its end: fathom.tracing.celery). With the harness, its lone
    verifier is called in the same run."""
    session = session_create(workspace=workspace)
    simple_chat_asked(session, roles, quality=quality)
    started, cpu_started = time.perf_counter(), time.process_time()
    with tracing_scope():
        assert session_tick(session_id=session.pk) == "ended"
    return time.perf_counter() - started, time.process_time() - cpu_started


def test_quality_overhead_per_fire_with_an_instant_model():
    # The fires without the harness and with it alternate, so a machine shared with other work slows them
    # alike; the overhead is each round's difference.
    drives = ("without", "with")
    workspaces, roles = {}, {}
    for drive in drives:
        workspaces[drive] = Workspace.objects.create(slug=f"bench-{uuid.uuid4().hex[:8]}", name="bench")
        settings = configuration.quality_settings_get(workspace_id=workspaces[drive].pk)
        settings.enabled = drive == "with"
        settings.save()
        roles[drive] = Roles(workspaces[drive])

    def fire(drive: str) -> tuple[float, float]:
        return _one_fire(workspaces[drive], roles[drive], quality=drive == "with")

    walls, cpus = {drive: [] for drive in drives}, {drive: [] for drive in drives}
    statements = {}
    try:
        for drive in drives:
            fire(drive)  # warm-up
            for script in roles[drive].scripts.values():
                script.reset()
        for _ in range(OVERHEAD_FIRES):
            for drive in drives:
                wall, cpu = fire(drive)
                walls[drive].append(wall)
                cpus[drive].append(cpu)
        calls = {drive: {role: n // OVERHEAD_FIRES for role, n in roles[drive].calls().items()} for drive in drives}
        for drive in drives:
            with CaptureQueriesContext(connection) as counted:
                fire(drive)
            statements[drive] = len(counted.captured_queries)
    finally:
        for drive in drives:
            roles[drive].reset()
    overhead = [(b - a) * 1000 for a, b in zip(walls["without"], walls["with"], strict=True)]
    cpu_overhead = [(b - a) * 1000 for a, b in zip(cpus["without"], cpus["with"], strict=True)]
    ms = {drive: statistics.median(walls[drive]) * 1000 for drive in drives}
    print(f"\n[quality] SIMPLE chat fire with an instant model, {OVERHEAD_FIRES} fires each way, alternating: p50 "
          f"{ms['without']:.1f} ms without the harness, {ms['with']:.1f} ms with it: overhead p50 "
          f"{percentile(overhead, 50):.1f} ms, p95 {percentile(overhead, 95):.1f} ms (target p50 <= 15 ms)")
    print(f"[quality] the same overhead in this process's CPU time (the database's own work aside, so a busy "
          f"machine moves it less): p50 {percentile(cpu_overhead, 50):.1f} ms")
    print(f"[quality] model calls per fire and role: with the harness {calls['with']}, without {calls['without']}")
    print(f"[quality] database statements per fire: {statements['with']} with the harness, "
          f"{statements['without']} without: {statements['with'] - statements['without']} the harness's")
    assert calls["with"] == {"classifier": 1, "main": 2, "verifier": 1}
    assert calls["without"] == {"main": 2}
