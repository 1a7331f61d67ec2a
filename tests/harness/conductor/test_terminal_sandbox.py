"""The terminal's sandbox, through the real entry point: an operator's `POST /v1/runs` asking for the
local shell, the run's steps and capability call run by the driver (the broker played in-process, as
the rest of the conductor's tests do), the command's output read from the call's result. Every escape
of issue 30's audit is refused; ordinary work still runs; a machine without the sandbox runs nothing."""

import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from fathom.embedded import EmbeddedRedis
from fathom.models import Workspace
from harness.conductor.models import Run
from harness.conductor.terminal import sandbox_check
from harness.runtime.files.sandbox import workspace_root
from tests.conftest import wait_for

pytestmark = pytest.mark.django_db


def terminal_run(api, driver, command: str) -> str:
    """The result of the terminal call of a run whose objective asks the local shell for `command`."""
    response = api.post("/v1/runs", {"objective": f"in the local shell, run `{command}`"}, format="json")
    assert response.status_code == 202, response.content
    driver.drain()
    run = Run.objects.get(pk=response.json()["id"])
    call = run.calls.get()
    assert call.worker == "terminal"
    return call.result


@pytest.fixture
def other_folder(terminal_limits):
    """Another workspace's folder, holding a secret."""
    other = Workspace.objects.create(slug=f"other-{uuid.uuid4().hex[:8]}", name="Another workspace")
    folder = workspace_root(other)
    (folder / "secret.txt").write_text("other-workspace-secret\n")
    return folder


def test_etc_shadow_is_not_there(api, driver, terminal_limits):
    assert Path("/etc/shadow").exists()  # on the server, so the test can fail
    result = terminal_run(api, driver, "cat /etc/shadow; ls /etc")
    assert "No such file or directory" in result and "shadow" not in result.replace("/etc/shadow", "")
    assert "root:" not in result


def test_another_workspaces_folder_is_not_there(api, driver, other_folder):
    result = terminal_run(api, driver, f"cat {other_folder}/secret.txt; ls {other_folder.parent}; ls /workspace/..")
    assert "other-workspace-secret" not in result and other_folder.name not in result.replace(str(other_folder), "")
    assert result.count("No such file or directory") == 2


def test_the_data_dirs_keys_and_sockets_are_not_there(api, driver, terminal_limits):
    data_dir = Path(settings.DATA_DIR)
    key = (data_dir / "encryption_key").read_text().strip()
    result = terminal_run(api, driver, f"cat {data_dir}/encryption_key {data_dir}/secret_key; ls {data_dir}")
    assert key and key not in result and settings.SECRET_KEY not in result
    assert result.count("No such file or directory") == 3


def test_the_database_and_redis_sockets_cannot_be_reached(api, driver, terminal_limits):
    connection.ensure_connection()
    server = connection.connection.info  # psycopg's: the socket folder and port this test talks through
    postgres = Path(server.host) / f".s.PGSQL.{server.port}"
    redis = EmbeddedRedis(settings.DATA_DIR).socket
    for path in (postgres, redis):  # both answer from here, so the test can fail
        with socket.socket(socket.AF_UNIX) as probe:
            probe.connect(str(path))
    script = "; ".join(f"python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{path}\")' 2>&1 | tail -1"
                       for path in (postgres, redis))
    result = terminal_run(api, driver, script)
    assert result.count("FileNotFoundError") == 2


def test_no_other_process_and_no_server_secret_in_any_environment(api, driver, terminal_limits, monkeypatch):
    # the server's environment holds a secret, and so does another process of the server's user
    monkeypatch.setenv("SECRET_KEY", settings.SECRET_KEY)
    server_process = subprocess.Popen(["/bin/sh", "-c", "echo started; exec sleep 60"], stdout=subprocess.PIPE,
                                      env={"SECRET_KEY": settings.SECRET_KEY})
    try:
        assert server_process.stdout.readline() == b"started\n"
        environ = Path(f"/proc/{server_process.pid}/environ")  # read empty while the exec is under way
        wait_for(lambda: settings.SECRET_KEY in environ.read_text(errors="replace"), timeout=5)
        result = terminal_run(api, driver, f"cat /proc/1/environ /proc/*/environ | tr '\\0' '\\n'; env; "
                                           f"cat /proc/{server_process.pid}/environ; ls /proc | grep -c '^[0-9]'")
    finally:
        server_process.kill()
        server_process.communicate()
    assert settings.SECRET_KEY not in result and "SECRET_KEY" not in result
    assert f"/proc/{server_process.pid}/environ: No such file" in result
    assert int(result.rstrip().splitlines()[-1]) <= 4  # bwrap's init, the shell, ls and grep: the sandbox's own


def test_nothing_outside_the_folder_can_be_written(api, driver, terminal_limits, other_folder):
    marker = f"escape-{uuid.uuid4().hex[:8]}"
    targets = [f"/usr/{marker}", f"/etc/{marker}", f"/{marker}", f"{other_folder}/{marker}",
               f"{settings.FATHOM_FS_ROOT}/{marker}", f"{settings.DATA_DIR}/{marker}"]
    result = terminal_run(api, driver, "; ".join(f"touch {target}" for target in targets) +
                          f"; touch /tmp/{marker} && echo tmp-ok; touch /workspace/{marker} && echo workspace-ok")
    assert not any(Path(target).exists() for target in targets)
    assert not Path(f"/tmp/{marker}").exists()  # the sandbox's /tmp is its own
    assert "tmp-ok" in result and "workspace-ok" in result
    assert (workspace_root(terminal_limits.workspace) / marker).exists()


def test_ls_a_python_script_and_pip_work(api, driver, terminal_limits):
    if shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") is None:
        pytest.skip("this machine has no python3 under /usr to offer the sandbox")
    result = terminal_run(api, driver, "printf 'import sys\\nprint(6 * 7, sys.prefix)\\n' > script.py && ls && "
                                       "python3 script.py && (python3 -m pip --version || echo no-pip)")
    assert "[exit code 0]" in result and "script.py" in result and "42 /usr" in result
    assert "pip " in result or "no-pip" in result  # pip exists only where the system's python3 has it


def test_no_network_unless_the_workspace_allows_it(api, driver, terminal_limits):
    interfaces = "python3 -c 'import socket; print(sorted(n for _, n in socket.if_nameindex()))'"
    assert terminal_run(api, driver, interfaces).count("['lo']") == 1
    terminal_limits.terminal_network = True
    terminal_limits.save()
    shared = terminal_run(api, driver, interfaces)
    assert "['lo']" not in shared and "'lo'" in shared  # the server's interfaces


def test_without_bwrap_the_terminal_refuses_and_runs_nothing(api, driver, terminal_limits, settings):
    settings.FATHOM_TERMINAL_BWRAP = "/nonexistent/bwrap"
    result = terminal_run(api, driver, "touch ran-anyway")
    assert "refused: the terminal runs commands only in a sandbox" in result
    assert "apt-get install bubblewrap" in result and "FATHOM_TERMINAL_BWRAP" in result and "nothing ran" in result
    assert not (workspace_root(terminal_limits.workspace) / "ran-anyway").exists()
    assert "apt-get install bubblewrap" in sandbox_check()
    with pytest.raises(CommandError, match="terminal sandbox: unavailable"):
        call_command("fathom", "terminal", "check")


def test_a_sandbox_that_cannot_be_set_up_refuses_and_runs_nothing(api, driver, terminal_limits, settings, tmp_path):
    # a bwrap that the kernel refuses user namespaces to: it says so and exits before the command
    refused = tmp_path / "bwrap"
    refused.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    refused.chmod(0o755)
    settings.FATHOM_TERMINAL_BWRAP = str(refused)
    result = terminal_run(api, driver, "touch ran-anyway")
    assert "refused: the terminal's sandbox could not be set up, so nothing ran" in result
    assert "No permissions to creating new namespace" in result and "user namespaces" in result
    assert not (workspace_root(terminal_limits.workspace) / "ran-anyway").exists()
    assert "could not set up" in sandbox_check()


def test_the_check_says_ready_where_the_sandbox_works(bwrap_installed, capsys):
    assert sandbox_check() == ""
    call_command("fathom", "terminal", "check")
    assert "terminal sandbox: ready" in capsys.readouterr().out
