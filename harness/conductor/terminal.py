"""The terminal sandbox: one shell command of a workspace, or a refusal.

A command runs only when the workspace enables the terminal (ConductorSettings.terminal_enabled, off
by default), with `/bin/sh -c`, its working directory the workspace's file root (FATHOM_FS_ROOT/<slug>,
the folder of the harness's fs tools), an environment holding nothing of the server's (no keys, no
DATABASE_URL: PATH, HOME, LANG, TMPDIR only), resource limits the shell sets on itself before the
command's first line (CPU time, address space, file size, open files, no core dumps; as hard limits,
which an unprivileged command cannot raise), and a wall-clock timeout after which its whole process
group is killed. This bounds what a command can consume; it is not a jail: a command can still read
what the server's user may read. Run it as a user of its own for that."""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass

from harness.runtime.files.sandbox import workspace_root

MAX_COMMAND_CHARS = 4000
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class CommandResult:
    ok: bool
    output: str
    exit_code: int | None = None
    timed_out: bool = False
    refused: str = ""

    def text(self) -> str:
        if self.refused:
            return f"refused: {self.refused}"
        status = "timed out (killed)" if self.timed_out else f"exit code {self.exit_code}"
        return f"[{status}]\n{self.output}"


def command_run(*, workspace, limits, command: str) -> CommandResult:
    """Run `command` in the workspace's sandbox (see the module docstring), or refuse it. `limits` is
    the workspace's ConductorSettings."""
    if not limits.terminal_enabled:
        return CommandResult(False, "", refused="the terminal is not enabled in this workspace (conductor settings)")
    if not isinstance(command, str) or not command.strip():
        return CommandResult(False, "", refused="an empty command")
    if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
        return CommandResult(False, "", refused=f"a command must be text of at most {MAX_COMMAND_CHARS} characters")
    root = workspace_root(workspace)  # the fs tools' folder of the workspace
    env = {"PATH": SAFE_PATH, "HOME": str(root), "LANG": "C.UTF-8", "TMPDIR": str(root)}
    process = subprocess.Popen(
        ["/bin/sh", "-c", f"{_limits_line(limits)}\n{command}"], cwd=root, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    try:
        output, _ = process.communicate(timeout=limits.terminal_timeout_seconds)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(process)
        output, _ = process.communicate()
        timed_out = True
    text = output.decode("utf-8", errors="replace").replace("\x00", "")
    if len(text) > limits.terminal_output_chars:
        text = text[: limits.terminal_output_chars] + f"\n… ({len(text) - limits.terminal_output_chars} more chars)"
    return CommandResult(not timed_out and process.returncode == 0, text, process.returncode, timed_out)


def _limits_line(limits) -> str:
    """The shell's first line: the limits, or exit 126 without running the command. Not a preexec_fn:
    Python code between fork and exec is unsafe in a threaded process (the quality worker runs these
    calls on threads), and it rules out vfork, so each command would copy the whole worker's memory map."""
    cpu = limits.terminal_cpu_seconds
    return " && ".join([
        f"ulimit -S -t {cpu}", f"ulimit -H -t {cpu + 1}",  # SIGXCPU at the limit, SIGKILL a second later
        f"ulimit -v {limits.terminal_memory_mb * 1024}",  # KiB
        f"ulimit -f {limits.terminal_file_mb * 2048}",  # 512-byte blocks, as POSIX counts them
        "ulimit -n 256", "ulimit -c 0",
    ]) + " || exit 126"


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
