"""Database connections are pooled with a bound per process: concurrent requests through the ASGI
handler (a thread and a connection each) never hold more than the pool's maximum and give every
connection back; one the pool cannot serve in time gets a 503 envelope with Retry-After; an open
event stream holds none; a worker's threads give theirs back after each task and a prefork child
keeps its pool; the embedded server has room for every pool of the stack; bad bounds stop start-up."""

import asyncio
import math
import subprocess
import sys
import threading
import uuid

import httpx
import psycopg
import pytest
from django.conf import settings
from django.db import connection, connections

from fathom.asgi import application
from fathom.services import apikey_create
from fathom.tasks import traces_prune
from harness.runtime.services import session_create
from tests.conftest import REPO_ROOT, stop_worker, wait_for_worker, worker_env

BURST = 60
TASKS = 40


@pytest.fixture
def named_pool():
    """This process's pool made anew, its connections named for this test in pg_stat_activity (the
    session's worker and other processes share the server)."""
    name = f"fathom-test-{uuid.uuid4().hex[:8]}"
    options = connection.settings_dict["OPTIONS"]
    connections.close_all()
    connection.close_pool()
    options["application_name"] = name
    try:
        yield name
    finally:
        connections.close_all()
        connection.close_pool()
        options.pop("application_name")


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_hold_at_most_the_pools_maximum_and_give_every_connection_back(workspace,
                                                                                            named_pool):
    key = apikey_create(workspace=workspace, role="viewer").secret
    connections.close_all()

    with _ConnectionCounter(named_pool) as counter:
        responses = asyncio.run(_burst("/v1/deltas", key, BURST))

    assert [r.status_code for r in responses] == [200] * BURST
    assert counter.samples > 0
    assert 1 <= counter.peak <= settings.FATHOM_DB_POOL_MAX_SIZE
    stats = connection.pool.get_stats()
    assert stats["pool_size"] - stats["pool_available"] == 0, "a request kept its connection"


@pytest.mark.django_db(transaction=True)
def test_a_request_the_pool_cannot_serve_in_time_is_answered_503_with_retry_after(workspace, monkeypatch):
    key = apikey_create(workspace=workspace, role="viewer").secret
    pool = connection.pool
    connections.close_all()
    held = [pool.getconn() for _ in range(pool.max_size)]
    monkeypatch.setattr(pool, "timeout", 0.2)
    try:
        [response] = asyncio.run(_burst("/v1/deltas", key, 1))
    finally:
        for conn in held:
            pool.putconn(conn)

    assert response.status_code == 503
    assert response.headers["Retry-After"] == str(math.ceil(settings.FATHOM_DB_POOL_TIMEOUT))
    error = response.json()["error"]
    assert error["code"] == "database_busy"
    assert error["details"] == {"retry_after_seconds": math.ceil(settings.FATHOM_DB_POOL_TIMEOUT)}
    assert error["message"]


@pytest.mark.django_db(transaction=True)
def test_open_event_streams_hold_no_connection_so_more_streams_than_connections_all_run(workspace, monkeypatch):
    """Each stream lasts two seconds and the pool lends for half a second: streams that kept their
    request's connection would leave the ones beyond the pool's maximum a 503."""
    key = apikey_create(workspace=workspace, role="viewer").secret
    session = session_create(workspace=workspace, title="streams")
    connections.close_all()
    monkeypatch.setattr(connection.pool, "timeout", 0.5)
    streams = settings.FATHOM_DB_POOL_MAX_SIZE + 5

    responses = asyncio.run(_burst(f"/v1/sessions/{session.id}/events?timeout=2", key, streams,
                                   accept="text/event-stream"))

    assert [r.status_code for r in responses] == [200] * streams
    assert all(r.text.startswith("retry:") for r in responses)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_thread_pool_worker_gives_each_tasks_connection_back_to_its_pool():
    """Six threads share a pool of two: a thread that kept its connection after a task would leave the
    next ones waiting until FATHOM_DB_POOL_TIMEOUT, and they would fail."""
    name, queue = f"pool-{uuid.uuid4().hex[:6]}", f"pool-test-{uuid.uuid4().hex[:6]}"
    application_name = f"fathom-test-{name}"  # libpq names the worker's connections after PGAPPNAME
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "fathom", "worker", "-P", "threads", "-c", "6", "-Q", queue,
         "-n", f"{name}@%h", "--loglevel", "WARNING", "--without-mingle", "--without-gossip"],
        cwd=REPO_ROOT, stdin=subprocess.DEVNULL, start_new_session=True, env={
            **worker_env(), "FATHOM_DB_POOL_MAX_SIZE": "2", "FATHOM_DB_POOL_TIMEOUT": "5",
            "PGAPPNAME": application_name})
    try:
        wait_for_worker(name)
        with _ConnectionCounter(application_name) as counter:
            results = [traces_prune.apply_async(queue=queue) for _ in range(TASKS)]
            outcomes = [result.get(timeout=120, propagate=False) for result in results]
    finally:
        stop_worker(worker)

    assert [type(outcome).__name__ for outcome in outcomes] == ["dict"] * TASKS
    assert 1 <= counter.peak <= 2


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_prefork_worker_child_keeps_its_pool_between_tasks():
    """Celery's Django fixup would close a prefork child's pool at every task (a new pool, and new
    connections, per task); the child's connection is the same server backend from task to task."""
    name, queue = f"fork-{uuid.uuid4().hex[:6]}", f"pool-test-{uuid.uuid4().hex[:6]}"
    application_name = f"fathom-test-{name}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "fathom", "worker", "-P", "prefork", "-c", "1", "-Q", queue,
         "-n", f"{name}@%h", "--loglevel", "WARNING", "--without-mingle", "--without-gossip"],
        cwd=REPO_ROOT, stdin=subprocess.DEVNULL, start_new_session=True,
        env={**worker_env(), "PGAPPNAME": application_name})
    backends = []
    try:
        wait_for_worker(name)
        with psycopg.connect(**_server_params(), autocommit=True) as conn:
            for _ in range(4):
                traces_prune.apply_async(queue=queue).get(timeout=60)
                backends.append(sorted(pid for [pid] in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = %s", [application_name])))
    finally:
        stop_worker(worker)

    assert backends[0] and backends == [backends[0]] * 4


@pytest.mark.django_db
def test_the_embedded_server_has_room_for_every_pool_of_the_stack():
    if not settings.EMBEDDED_POSTGRES:
        pytest.skip("max_connections of a server given by DATABASE_URL is its operator's")
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_connections")
        [max_connections] = cursor.fetchone()

    assert int(max_connections) == settings.FATHOM_DB_MAX_CONNECTIONS


def test_max_connections_is_the_pool_bound_times_the_stacks_processes_and_the_spare_ones(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "FATHOM_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "fathom.settings",
           "FATHOM_DB_POOL_MAX_SIZE": "4", "FATHOM_WORKER_CONCURRENCY": "3", "FATHOM_DB_SPARE_PROCESSES": "2"}
    printed = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings as s; print(s.FATHOM_DB_STACK_CONNECTIONS, "
                               "s.FATHOM_DB_MAX_CONNECTIONS, s.DATABASES['default']['OPTIONS']['pool'])"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60, check=True).stdout.split(maxsplit=2)

    # itself, web, the proxy, the worker's parent, 3 children, the quality worker, beat: 9 processes of 4
    assert printed[:2] == ["36", "44"]
    assert printed[2].strip() == "{'min_size': 1, 'max_size': 4, 'timeout': 10.0}"


@pytest.mark.parametrize("name, value", [("FATHOM_DB_POOL_MAX_SIZE", "1"), ("FATHOM_DB_POOL_MAX_SIZE", "ten"),
                                         ("FATHOM_DB_POOL_TIMEOUT", "soon"), ("FATHOM_DB_POOL_TIMEOUT", "0"),
                                         ("FATHOM_WORKER_CONCURRENCY", "0"), ("FATHOM_DB_SPARE_PROCESSES", "-1")])
def test_a_malformed_bound_stops_start_up_naming_the_variable(name, value, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "FATHOM_DATA_DIR": str(tmp_path), name: value}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert name in result.stderr


async def _burst(path: str, key: str, count: int, accept: str = "application/json") -> list[httpx.Response]:
    """`count` requests at once through the ASGI application, as uvicorn serves it."""
    transport = httpx.ASGITransport(app=application)
    headers = {"Authorization": f"Bearer {key}", "Accept": accept}
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver", timeout=60) as client:
        return await asyncio.gather(*(client.get(path, headers=headers) for _ in range(count)))


def _server_params() -> dict:
    """Where the test database is, for a connection of our own outside Django's pool."""
    return {k: v for k, v in connection.get_connection_params().items()
            if k in ("host", "port", "user", "password", "dbname")}


class _ConnectionCounter:
    """Samples how many server connections carry `application_name` until the block ends."""

    def __init__(self, application_name: str):
        self.application_name, self.peak, self.samples = application_name, 0, 0
        self._done = threading.Event()

    def __enter__(self):
        self._conn = psycopg.connect(**_server_params(), autocommit=True, application_name="fathom-test-counter")
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        self._conn.close()

    def _sample(self):
        while True:
            [count] = self._conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                                         [self.application_name]).fetchone()
            self.peak, self.samples = max(self.peak, count), self.samples + 1
            if self._done.wait(0.005):
                return
