"""The whole stack under load: figures printed; the run fails only on errors or on more PostgreSQL
connections than the pools allow, never on time.

    .venv/bin/python -m pytest tests/bench/bench_load.py -s -q -o python_files='bench_*.py'
    FATHOM_BENCH_LOAD_SECONDS=15 .venv/bin/python -m pytest tests/bench/bench_load.py -s -q -o python_files='bench_*.py'

It starts `fathom up` (uvicorn, a prefork worker, beat) on embedded servers in a new temp data dir (or
on DATABASE_URL / REDIS_URL when they are set), seeds a workspace, then runs locust headless
(tests/bench/load_locustfile.py): FATHOM_BENCH_LOAD_USERS clients (50) for FATHOM_BENCH_LOAD_SECONDS
(60), each always with one request in flight, across the delta list, a delta by id, search, the fire
list, delta writes and session messages (each message is a fire for the worker, with the offline
model). Meanwhile it samples pg_stat_activity every 0.1 s. Printed: requests/s, p50/p95/p99, errors
by endpoint, and the peak number of client connections against the stack's bound (the per-process
pool maximum summed over the processes `fathom up` starts; see docs/operations.md, "Database connections")."""

import csv
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from django.conf import settings

from fathom import embedded

REPO_ROOT = Path(__file__).resolve().parents[2]
USERS = int(os.environ.get("FATHOM_BENCH_LOAD_USERS", "50"))
SECONDS = int(os.environ.get("FATHOM_BENCH_LOAD_SECONDS", "60"))
SEED_DELTAS = 500
SAMPLE_SECONDS = 0.1


def test_load_through_the_whole_stack():
    data_dir = Path(tempfile.mkdtemp(prefix="fathom-load-"))
    port = _free_port()
    env = {**os.environ, "FATHOM_DATA_DIR": str(data_dir), "FATHOM_LOG_LEVEL": "WARNING", "FATHOM_PROXY_PORT": "0"}
    stack = subprocess.Popen([sys.executable, "manage.py", "fathom", "up", "--port", str(port)], cwd=REPO_ROOT,
                             env=env, stdout=open(data_dir / "stack.log", "w"), stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(base, stack, data_dir)
        key = subprocess.run([sys.executable, "manage.py", "fathom", "apikey", "create", "--workspace", "default",
                              "--role", "owner"], cwd=REPO_ROOT, env=env, check=True, capture_output=True,
                             text=True).stdout.strip().splitlines()[-1]
        _seed(base, key)
        with _ConnectionSampler(_database_dsn(data_dir)) as sampler:
            csv_prefix = data_dir / "load"
            subprocess.run([sys.executable, "-m", "locust", "-f", str(REPO_ROOT / "tests/bench/load_locustfile.py"),
                            "--headless", "-u", str(USERS), "-r", str(USERS), "-t", f"{SECONDS}s",
                            "--host", base, "--csv", str(csv_prefix), "--only-summary", "--loglevel", "WARNING",
                            "--exit-code-on-error", "0"],
                           cwd=REPO_ROOT, env={**env, "FATHOM_BENCH_KEY": key}, check=True)
        rows = list(csv.DictReader(open(f"{csv_prefix}_stats.csv")))
        failures = list(csv.DictReader(open(f"{csv_prefix}_failures.csv")))
        stack_alive = stack.poll() is None
    finally:
        _stop(stack, data_dir)

    total = next(row for row in rows if row["Name"] == "Aggregated")
    bound = _stack_bound()
    print(f"\n{USERS} clients for {SECONDS} s through uvicorn + a prefork worker "
          f"(-c {os.environ.get('FATHOM_WORKER_CONCURRENCY', '2')}) + beat, {os.cpu_count()} cores (shared: noisy)")
    print(f"  {'endpoint':36} {'requests':>9} {'errors':>7} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7}")
    for row in rows:
        print(f"  {row['Name']:36} {row['Request Count']:>9} {row['Failure Count']:>7} "
              f"{float(row['Requests/s']):7.1f} {row['50%']:>7} {row['95%']:>7} {row['99%']:>7}")
    for failure in failures:
        print(f"  error x{failure['Occurrences']}: {failure['Method']} {failure['Name']}: {failure['Error'][:160]}")
    print(f"  PostgreSQL client connections: peak {sampler.peak} (server max_connections "
          f"{sampler.max_connections}); the stack's bound: {bound or 'none (no pool)'}")
    print(f"  the stack {'was still up' if stack_alive else 'had DIED'} at the end of the run")

    assert int(total["Failure Count"]) == 0, "requests failed (see above)"
    assert stack_alive
    assert bound is not None and sampler.peak <= bound


class _ConnectionSampler:
    """Counts client backends in pg_stat_activity (its own connection left out) every SAMPLE_SECONDS."""

    def __init__(self, dsn: str):
        self.dsn, self.peak, self.max_connections = dsn, 0, None
        self._stop = threading.Event()

    def __enter__(self):
        self._conn = psycopg.connect(self.dsn, autocommit=True)
        self.max_connections = int(self._conn.execute("SHOW max_connections").fetchone()[0])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._conn.close()

    def _run(self):
        while not self._stop.wait(SAMPLE_SECONDS):
            count = self._conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                                       "AND pid <> pg_backend_pid()").fetchone()[0]
            self.peak = max(self.peak, count)


def _stack_bound() -> int | None:
    """The most connections the processes `fathom up` starts may hold (None before pools existed)."""
    return getattr(settings, "FATHOM_DB_STACK_CONNECTIONS", None)


def _database_dsn(data_dir: Path) -> str:
    if settings.DATABASE_URL:
        return settings.DATABASE_URL
    return f"host={embedded.EmbeddedPostgres(data_dir).status().address} user=postgres dbname=fathom"


def _seed(base: str, key: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    words = "rover harbour tide lantern granite orbit meadow ledger compass ember quartz".split()
    items = [{"content": f"note {i}: {words[i % len(words)]} {words[(i * 7) % len(words)]}", "tags": ["kind:note"],
              "source": "seed"} for i in range(SEED_DELTAS)]
    response = httpx.post(f"{base}/v1/deltas", json=items, headers=headers, timeout=120)
    assert response.status_code == 201, response.text


def _wait_for(base: str, stack: subprocess.Popen, data_dir: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if stack.poll() is not None:
            pytest.fail(f"fathom up exited with {stack.returncode}:\n{(data_dir / 'stack.log').read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/v1/health", timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the stack did not answer within {timeout} s:\n{(data_dir / 'stack.log').read_text()[-3000:]}")


def _stop(stack: subprocess.Popen, data_dir: Path) -> None:
    """`fathom up` stops its children and the embedded servers on SIGTERM; whatever is left is killed."""
    if stack.poll() is None:
        stack.send_signal(signal.SIGTERM)
        try:
            stack.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(stack.pid, signal.SIGKILL)
            stack.wait()
    if settings.EMBEDDED_POSTGRES or settings.EMBEDDED_REDIS:
        embedded.stop_all(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
