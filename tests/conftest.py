"""Fixtures shared by every app's tests: workspaces, API clients by role, a real Celery worker, a live ASGI
server (uvicorn, as `fathom up` runs it)."""

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
import warnings
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection, connections
from rest_framework.test import APIClient

from fathom.models import Workspace
from fathom.services import apikey_create

REPO_ROOT = Path(__file__).resolve().parent.parent

pytest_plugins = ["tests.browser"]


# The markers a test gets from the fixtures it uses, so `make test-fast` (-m "not worker and not
# browser and not slow") leaves it out even when its author forgot the marker.
_MARKED_BY_FIXTURE = {"celery_worker": "worker", "workers": "worker", "browser": "browser"}


def pytest_collection_modifyitems(items):
    for item in items:
        for fixture in set(_MARKED_BY_FIXTURE).intersection(getattr(item, "fixturenames", ())):
            item.add_marker(_MARKED_BY_FIXTURE[fixture])


@pytest.fixture
def workspace(db):
    return Workspace.objects.create(slug=f"ws-{uuid.uuid4().hex[:8]}", name="Test workspace")


@pytest.fixture
def other_workspace(db):
    return Workspace.objects.create(slug=f"other-{uuid.uuid4().hex[:8]}", name="Another workspace")


@pytest.fixture
def api_client_for():
    """api_client_for(workspace, role="operator") -> an APIClient sending a fresh key of that role."""

    def make(workspace: Workspace, role: str = "operator") -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {apikey_create(workspace=workspace, role=role).secret}")
        client.workspace = workspace
        return client

    return make


@pytest.fixture
def api(workspace, api_client_for) -> APIClient:
    """An operator's client in `workspace`."""
    return api_client_for(workspace, "operator")


def worker_env() -> dict:
    """The environment a worker subprocess needs to see the test database and broker."""
    env = dict(os.environ)
    if not settings.EMBEDDED_POSTGRES:
        db = connection.settings_dict
        host = db["HOST"] or "localhost"
        env["DATABASE_URL"] = f"postgresql://{db['USER']}:{db['PASSWORD']}@{host}:{db['PORT'] or 5432}/{db['NAME']}"
    return env


def start_worker(name: str, queues=None, concurrency: int = 1, env: dict | None = None) -> subprocess.Popen:
    queues = queues or settings.FATHOM_QUEUES
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "fathom", "worker", "-Q", ",".join(queues), "-c", str(concurrency),
         "-n", f"{name}@%h", "--loglevel", "WARNING", "--without-mingle", "--without-gossip"],
        cwd=REPO_ROOT, env={**worker_env(), **(env or {})}, stdin=subprocess.DEVNULL, start_new_session=True,
    )


def run_at_once(actions, timeout: float = 60) -> list[Exception]:
    """Run each of `actions` (callables) in a thread of its own, all let go together, and return what
    they raised. Each thread gives its database connections back at its end."""
    barrier, errors = threading.Barrier(len(actions)), []

    def run(action):
        try:
            barrier.wait(timeout=timeout)
            action()
        except Exception as exc:  # noqa: BLE001 - returned to the test, which asserts on them
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return errors


def percentile(values, q):
    """The `q`th percentile (0-100) of `values`, nearest rank: what the benchmarks print."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def wait_for(predicate, timeout: float = 30.0, every: float = 0.05):
    """The predicate's first truthy value, polled every `every` seconds; AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("timed out waiting")


def wait_for_worker(name: str, timeout: float = 30) -> str:
    """The worker's node name (name@host) once it answers a ping."""
    from fathom.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=0.5) or []
        for node in (list(reply)[0] for reply in replies):
            if name in node:
                return node
    raise TimeoutError(f"worker {name} did not answer within {timeout}s")


def stop_worker(process: subprocess.Popen) -> None:
    import signal

    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def start_stack_workers(name: str) -> dict[str, subprocess.Popen]:
    """The Celery workers `fathom up` starts, as it starts them (fathom.supervisor.stack_children: the
    prefork worker and the thread-pool quality worker, their queues, pools and concurrency from
    settings), named `<name>-worker` and `<name>-quality`, each answering a ping. Stop each with
    stop_worker."""
    from fathom.supervisor import stack_children

    started = {}
    try:
        for child in stack_children(host="127.0.0.1", port=settings.HTTP_PORT):
            if child.name not in ("worker", "quality"):
                continue
            argv = list(child.argv)
            argv[argv.index("-n") + 1] = f"{name}-{child.name}@%h"
            argv[argv.index("--loglevel") + 1] = "WARNING"
            started[child.name] = subprocess.Popen(argv, cwd=REPO_ROOT, env=worker_env(), stdin=subprocess.DEVNULL,
                                                   start_new_session=True)
        for kind in started:
            wait_for_worker(f"{name}-{kind}", timeout=60)
    except BaseException:
        for process in started.values():
            stop_worker(process)
        raise
    return started


_session_worker: list[str] = []  # the node name of the session's worker once it runs


@pytest.fixture(scope="session")
def session_celery_worker(django_db_setup, django_db_blocker):
    """A real Celery worker process for the whole session, consuming only while a test that asks for
    it through `celery_worker` runs: tests use `celery_worker`, not this."""
    name = f"test-{uuid.uuid4().hex[:6]}"
    process = start_worker(name)
    try:
        _session_worker.append(wait_for_worker(name))
        yield name
    finally:
        _session_worker.clear()
        stop_worker(process)


@pytest.fixture
def celery_worker(session_celery_worker):
    """The session's real worker consuming every queue, for this test. Between the tests that ask for
    it, it consumes nothing, so another test's tasks (sent by the test, its live server or workers of
    its own) never reach it. Tests that use it need `transactional_db` so the worker sees their rows."""
    worker_consume(_session_worker[0], settings.FATHOM_QUEUES)
    yield session_celery_worker
    worker_consume(_session_worker[0], ())


def worker_consume(node: str, queues, timeout: float = 30) -> None:
    """Make the worker `node` consume exactly `queues`, and wait until it says it does (a broadcast
    control command can be missed, so it is sent again until then)."""
    from fathom.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replies = app.control.inspect(destination=[node], timeout=1).active_queues() or {}
        if node in replies:
            consuming = {queue["name"] for queue in replies[node]}
            if consuming == set(queues):
                return
            for queue in set(queues) - consuming:
                app.control.add_consumer(queue, destination=[node], reply=True)
            for queue in consuming - set(queues):
                app.control.cancel_consumer(queue, destination=[node], reply=True)
    raise AssertionError(f"worker {node} did not consume {sorted(queues)} within {timeout}s")


@pytest.fixture(autouse=True)
def broker_quiet_before_flush(request):
    """A transactional test commits, so its writes' background tasks (judge axes, embeddings) reach
    the broker, and a worker, the session's or the test's own, takes them. Running while the
    teardown TRUNCATEs the tables, they deadlock it: before the flush, purge the queues and wait
    until the session's worker is idle. Before the test, the queues are emptied too, of what earlier
    tests left there."""
    marker = request.node.get_closest_marker("django_db")
    transactional = (marker is not None and marker.kwargs.get("transaction")) or not {
        "transactional_db", "live_server"}.isdisjoint(request.fixturenames)
    if not transactional:
        yield
        return
    request.getfixturevalue("transactional_db")  # set up first, so this teardown runs before its flush
    broker_quiesce(None)
    yield
    broker_quiesce(_session_worker[0] if _session_worker else None)


def broker_quiesce(worker: str | None, timeout: float = 30) -> None:
    """Purge every queue until nothing is left and `worker` (a node name, if any) runs and holds no
    task: a task it is running may still enqueue another. A worker that does not answer counts as
    busy. Gives up, with a warning, after `timeout` seconds."""
    from fathom.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        purged = app.control.purge()
        busy = False
        if worker is not None:
            inspect = app.control.inspect(destination=[worker], timeout=1)
            active, reserved = inspect.active(), inspect.reserved()
            busy = active is None or reserved is None or any(active.values()) or any(reserved.values())
        if not purged and not busy:
            return
        time.sleep(0.05)
    warnings.warn(f"the broker or worker {worker} was still busy after {timeout}s", stacklevel=1)


@pytest.fixture
def scripted_llm(workspace):
    """A scripted model answering every role of `workspace`: queue answers with .reply(...) /
    .call_tool(...) / .fail(...), read requests back from .sent (see fathom.llm.scripted)."""
    from fathom.llm.scripted import Script

    script = Script.install(workspace)
    yield script
    script.reset()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker):
    """uvicorn serving the project on a free port, for the whole test session; tests using it need
    `transactional_db` so the server sees their rows."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "fathom.asgi:application", "--host", "127.0.0.1", "--port", str(port),
         "--no-access-log", "--log-level", "warning", "--timeout-graceful-shutdown", "1"],
        cwd=REPO_ROOT, env=worker_env(), stdin=subprocess.DEVNULL, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/v1/schema/", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("uvicorn did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(autouse=True)
def _loopback_models_allowed(settings):
    """Tests register workspaces' models at local fake providers (127.0.0.1): the deployment allows
    loopback base URLs here; the tests of the refusal switch it off again."""
    settings.FATHOM_MODEL_ALLOW_LOOPBACK = True
