"""The terminal bounds what it runs: off by default, inside the workspace's folder (at /workspace in its
sandbox), a scrubbed environment, a timeout that kills the whole sandbox, resource limits set before the
command runs, and every command traced. What the sandbox hides: test_terminal_sandbox.py."""

import signal
import time

import pytest

from fathom.tracing import span
from fathom.tracing.models import TraceEvent
from harness.conductor.models import AgendaItem, CapabilityCall, Run
from harness.conductor.services import conductor_settings_get
from harness.conductor.terminal import command_run
from harness.conductor.worker_port import execute
from harness.runtime import claims
from harness.runtime.files.sandbox import workspace_root

pytestmark = pytest.mark.django_db


@pytest.fixture
def limits(terminal_limits):
    return terminal_limits


def test_the_terminal_is_off_by_default(workspace):
    limits = conductor_settings_get(workspace_id=workspace.pk)
    assert limits.terminal_enabled is False
    result = command_run(workspace=workspace, limits=limits, command="touch /tmp/should-not-exist-$$")
    assert not result.ok and result.refused.startswith("the terminal is not enabled")
    assert result.text().startswith("refused:")


@pytest.mark.parametrize("command", ["", "   ", "a\x00b", "x" * 4001])
def test_empty_nul_and_overlong_commands_are_refused(workspace, limits, command):
    assert command_run(workspace=workspace, limits=limits, command=command).refused


def test_a_command_runs_in_the_workspaces_file_root(workspace, limits, tmp_path):
    result = command_run(workspace=workspace, limits=limits, command="pwd && echo hi > note.txt && ls && id -u")
    root = tmp_path / "files" / workspace.slug
    assert result.ok and result.exit_code == 0
    assert result.output.splitlines() == ["/workspace", "note.txt", "65534"]
    assert (root / "note.txt").read_text() == "hi\n" and workspace_root(workspace) == root


def test_the_environment_is_scrubbed(workspace, limits, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("DATABASE_URL", "postgresql://user:pw@db/x")
    result = command_run(workspace=workspace, limits=limits, command="env")
    names = {line.split("=", 1)[0] for line in result.output.splitlines()}
    assert "sk-secret-value" not in result.output and "OPENAI_API_KEY" not in names and "DATABASE_URL" not in names
    assert names <= {"PATH", "HOME", "LANG", "TMPDIR", "PWD", "SHLVL", "_", "OLDPWD"}


def test_a_command_past_its_timeout_is_killed_with_its_children(workspace, limits, tmp_path):
    limits.terminal_timeout_seconds = 1
    marker = tmp_path / "files" / workspace.slug / "late"
    result = command_run(workspace=workspace, limits=limits, command="(sleep 3; touch late) & sleep 30")
    assert result.timed_out and not result.ok and "timed out" in result.text()
    time.sleep(3)  # the background child would have touched the file by now
    assert not marker.exists()


def test_resource_limits_bound_file_size_and_memory(workspace, limits):
    limits.terminal_file_mb = 1
    limits.terminal_memory_mb = 64
    big_file = command_run(workspace=workspace, limits=limits, command="head -c 3000000 /dev/zero > big; ls -l big")
    assert "File size limit exceeded" in big_file.output and " 1048576 " in big_file.output  # cut at the limit
    memory = command_run(workspace=workspace, limits=limits,
                         command="python3 -c 'x = bytearray(512 * 1024 * 1024); print(len(x))'")
    assert not memory.ok and "MemoryError" in memory.output and "536870912" not in memory.output


def test_a_command_past_its_cpu_time_is_stopped(workspace, limits):
    limits.terminal_cpu_seconds = 1
    limits.terminal_timeout_seconds = 60
    result = command_run(workspace=workspace, limits=limits, command="ulimit -t; ulimit -H -t; while :; do :; done")
    assert result.output.split() == ["1", "2"]  # soft, then hard a second later
    assert result.exit_code == 128 + signal.SIGXCPU and not result.timed_out  # bwrap reports a signal so


def test_output_is_cut_to_the_workspaces_limit(workspace, limits):
    limits.terminal_output_chars = 100
    result = command_run(workspace=workspace, limits=limits, command="yes | head -c 5000")
    assert len(result.output) < 200 and "more chars" in result.output


def test_every_command_of_the_terminal_worker_is_traced(workspace, limits):
    run = Run.objects.create(workspace=workspace, objective="in the local shell, run `echo a; exit 3`",
                             capabilities=["researcher", "terminal"])
    item = AgendaItem.objects.create(workspace=workspace, run=run, number=1, capability="terminal", source="bootstrap",
                                     input={"task": "run it", "command": "echo a; exit 3"})
    call = CapabilityCall.objects.create(workspace=workspace, run=run, item=item, worker="terminal", call_id="call-t")
    assert claims.claim(CapabilityCall, call.pk, stale_after=60)
    with span("test", workspace=workspace) as root:
        outcome = execute(call=call, limits=limits)
    assert "exit code 3" in outcome.result and outcome.model_calls == 2  # shell, then finish (offline)
    tool = TraceEvent.objects.get(trace_id=root.trace_id, kind="worker.tool.result")
    assert tool.payload["exit_code"] == 3 and tool.payload["ok"] is False
    assert TraceEvent.objects.get(trace_id=root.trace_id, kind="worker.tool.call").payload["arguments"] == {
        "command": "echo a; exit 3"}


def test_the_terminal_worker_refuses_when_the_workspace_turned_it_off_mid_run(workspace, limits):
    run = Run.objects.create(workspace=workspace, objective="x", capabilities=["researcher", "terminal"])
    item = AgendaItem.objects.create(workspace=workspace, run=run, number=1, capability="terminal", source="bootstrap",
                                     input={"task": "t", "command": "echo no"})
    call = CapabilityCall.objects.create(workspace=workspace, run=run, item=item, worker="terminal", call_id="call-u")
    limits.terminal_enabled = False
    outcome = execute(call=call, limits=limits)
    assert not outcome.ok and outcome.result.startswith("refused:") and outcome.model_calls == 0
