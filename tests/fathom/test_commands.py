import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from io import StringIO
from pathlib import Path

import httpx
import pytest
from django.core.management import CommandError, call_command

from fathom.models import ApiKey, Workspace
from tests.conftest import REPO_ROOT


def test_workspace_create_and_apikey_create_print_the_key_on_the_last_line(db):
    call_command("fathom", "workspace", "create", "acme", stdout=StringIO())
    out = StringIO()
    call_command("fathom", "apikey", "create", "--workspace", "acme", "--role", "viewer", stdout=out)
    secret = out.getvalue().strip().splitlines()[-1]
    key = ApiKey.objects.get(workspace__slug="acme")
    assert secret.startswith(f"fth_{key.prefix}_") and key.role == "viewer"


def test_commands_refuse_bad_input_clearly(db):
    with pytest.raises(CommandError, match="not a valid slug"):
        call_command("fathom", "workspace", "create", "Not A Slug", stdout=StringIO())
    with pytest.raises(CommandError, match="no workspace 'ghost'"):
        call_command("fathom", "apikey", "create", "--workspace", "ghost", "--role", "owner", stdout=StringIO())
    assert not Workspace.objects.filter(slug="ghost").exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def stack_dir():
    """A directory for a whole `fathom up` stack. Not pytest's tmp_path: embedded PostgreSQL runs as
    another user when we are root, and every pytest run resets its base temp dir to mode 0700."""
    path = Path(tempfile.mkdtemp(prefix="fathom-up-"))
    yield path
    subprocess.run([sys.executable, "manage.py", "fathom", "down"], cwd=REPO_ROOT, capture_output=True, timeout=60,
                   env={**os.environ, "FATHOM_DATA_DIR": str(path / "data")})  # whatever a failed test left
    shutil.rmtree(path, ignore_errors=True)


def _start_up(tmp_path, port):
    env = {**os.environ, "FATHOM_DATA_DIR": str(tmp_path / "data"), "FATHOM_ADMIN_EMAIL": "ops@example.com",
           "FATHOM_ADMIN_PASSWORD": "correct horse battery"}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    return subprocess.Popen([sys.executable, "manage.py", "fathom", "up", "--port", str(port)], cwd=REPO_ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_healthy(port, process, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read()
        try:
            response = httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=5)
            if response.status_code == 200:
                return response.json()
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError("fathom up never became healthy")


def _status(tmp_path) -> str:
    env = {**os.environ, "FATHOM_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run([sys.executable, "manage.py", "fathom", "status"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=60).stdout


@pytest.mark.slow
def test_up_runs_a_healthy_stack_and_ctrl_c_stops_everything_within_10s(stack_dir):
    port = _free_port()
    process = _start_up(stack_dir, port)
    try:
        health = _wait_healthy(port, process)
        assert health["workers"]["ok"] and health["beat"]["ok"] and health["database"]["pgvector_version"]
        login = httpx.post(f"http://127.0.0.1:{port}/admin/login/", timeout=5)
        assert login.status_code in (200, 403)  # the admin answers (403: no CSRF cookie sent)

        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        output, _ = process.communicate(timeout=15)
        assert time.monotonic() - started < 10, output
        assert process.returncode == 0, output
        assert "stopped embedded" in output
        assert "postgres: stopped" in _status(stack_dir)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.slow
def test_up_exits_non_zero_and_names_the_child_that_died(stack_dir):
    port = _free_port()
    process = _start_up(stack_dir, port)
    try:
        _wait_healthy(port, process)
        beat = subprocess.run(["pgrep", "-f", f"{stack_dir}.*celerybeat-schedule"], capture_output=True, text=True)
        os.kill(int(beat.stdout.split()[0]), signal.SIGKILL)
        output, _ = process.communicate(timeout=20)
        assert process.returncode != 0
        assert "beat exited" in output
    finally:
        if process.poll() is None:
            process.kill()


def test_with_urls_given_nothing_embedded_starts(tmp_path, db):
    from django.conf import settings
    from django.db import connection

    socket_dir = connection.get_connection_params()["host"]
    env = {
        **os.environ,
        "FATHOM_DATA_DIR": str(tmp_path / "elsewhere"),
        "DATABASE_URL": f"postgresql://postgres@/{connection.settings_dict['NAME']}?host={socket_dir}",
        "REDIS_URL": settings.REDIS_URL,
    }
    script = ("from fathom.health import health_report; r = health_report(); "
              "print(r['database']['ok'], r['database']['embedded'], r['redis']['ok'], r['redis']['embedded'])")
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1].split() == ["True", "False", "True", "False"], result.stderr
    assert not (tmp_path / "elsewhere" / "postgres").exists()
    assert not (tmp_path / "elsewhere" / "redis").exists()
