"""Harness fixtures: sessions, a live ASGI server (uvicorn, as `fathom up` runs it), worker
processes a test starts (and kills) itself, a local wire-protocol model server."""

import socket
import subprocess
import sys
import time
import uuid

import httpx
import pytest

from harness.runtime.services import session_create
from tests.conftest import REPO_ROOT, start_worker, stop_worker, wait_for_worker, worker_env
from tests.fathom.wire import WireServer

ALL_QUEUES = ["fires", "quality", "memory", "maintenance"]


@pytest.fixture
def session(workspace):
    return session_create(workspace=workspace, title="test session")


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


@pytest.fixture
def model(workspace):
    """The workspace's main role answered by a local OpenAI-wire server (other roles: offline)."""
    from fathom.llm.services import model_assign, model_create

    server = WireServer().start()
    row = model_create(name=f"wire-{uuid.uuid4().hex[:8]}", provider="openai-compatible", model="wire-model",
                       base_url=f"{server.url}/v1", api_key="sk-local")
    model_assign(workspace=workspace, role="main", model=row)
    yield server
    server.stop()


@pytest.fixture
def workers():
    """start(queues, env) -> a new real worker process (concurrency 1), with `env` added to its
    environment, stopped after the test."""
    started = []

    def start(queues=ALL_QUEUES, env=None):
        name = f"w-{uuid.uuid4().hex[:6]}"
        process = start_worker(name, queues=queues, env=env)
        started.append(process)
        wait_for_worker(name)
        return process

    yield start
    for process in started:
        stop_worker(process)
