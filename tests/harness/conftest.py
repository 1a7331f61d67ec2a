"""Harness fixtures: sessions, a live ASGI server (uvicorn, as `fathom up` runs it)."""

import socket
import subprocess
import sys
import time

import httpx
import pytest

from harness.runtime.services import session_create
from tests.conftest import REPO_ROOT, worker_env


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
