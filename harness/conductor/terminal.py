"""The terminal: one shell command of a workspace, run in a bubblewrap sandbox, or a refusal.

A command runs only when the workspace enables the terminal (ConductorSettings.terminal_enabled, off
by default), with `/bin/sh -c` inside `bwrap` (bubblewrap, FATHOM_TERMINAL_BWRAP), which gives it:

- namespaces of its own (user, pid, ipc, uts, cgroup, and network unless the workspace allows it:
  ConductorSettings.terminal_network): it runs as uid/gid 65534 (nobody) with no capability, sees only
  its own processes (a new /proc), and without network has only a loopback of its own;
- a filesystem built from an allow-list: the workspace's folder (FATHOM_FS_ROOT/<slug>, the fs tools'
  folder) read-write at /workspace, its working directory and HOME; /usr (and /bin, /sbin, /lib*) read
  only; a few files of /etc that hold no secret (ETC_READABLE: no shadow, no keys); a minimal /dev; a
  fresh /tmp and /dev/shm (tmpfs of terminal_file_mb each); everything else read-only. Nothing else
  exists in it: not the data dir (its keys, the embedded PostgreSQL's and Redis's sockets), not the
  other workspaces' folders, not the server's code;
- an environment of PATH, HOME, LANG and TMPDIR only (bwrap itself is started with PATH alone);
- the workspace's limits, set by the shell on itself before the command's first line (CPU time,
  address space, file size, open files, no core dumps; as hard limits, which the command cannot raise),
  and a wall-clock timeout after which the sandbox is killed with everything in it.

When the sandbox cannot be set up (bwrap missing, user namespaces refused by the kernel) the command
is refused with the reason and what to install; it never runs unconfined. `sandbox_check` tells an
operator the same before the first command (`fathom terminal check`, run by `make run`)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from harness.runtime.files.sandbox import workspace_root

MAX_COMMAND_CHARS = 4000
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
WORKSPACE_DIR = "/workspace"
SANDBOX_UID = SANDBOX_GID = 65534  # nobody
# /etc entries (glob patterns) a command may read: the loader's cache, users and groups by name (no
# passwords: those are in shadow, never shown), name resolution and certificates (for a workspace with
# network), the time zone, alternatives (the links of /usr/bin), Debian's python configuration.
ETC_READABLE = ("alternatives", "ca-certificates", "gai.conf", "group", "host.conf", "hosts", "ld.so.cache",
                "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types", "nsswitch.conf", "passwd", "protocols",
                "python3*", "resolv.conf", "services", "ssl")
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) "
                "or point FATHOM_TERMINAL_BWRAP at its bwrap")
USERNS_HINT = ("bwrap needs unprivileged user namespaces: sysctl user.max_user_namespaces must be above 0 "
               "(and kernel.unprivileged_userns_clone=1 where it exists; on Ubuntu 24.04+ "
               "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap); inside a container "
               "the runtime must allow them")


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
    """Run `command` in the workspace's sandbox (see the module docstring), or refuse it without running
    anything. `limits` is the workspace's ConductorSettings."""
    if not limits.terminal_enabled:
        return CommandResult(False, "", refused="the terminal is not enabled in this workspace (conductor settings)")
    if not isinstance(command, str) or not command.strip():
        return CommandResult(False, "", refused="an empty command")
    if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
        return CommandResult(False, "", refused=f"a command must be text of at most {MAX_COMMAND_CHARS} characters")
    bwrap = bwrap_path()
    if bwrap is None:
        return CommandResult(False, "", refused=f"{_missing_bwrap()}; nothing ran")
    # The shell's first line prints a fresh token: output without it is bwrap's own complaint about a
    # sandbox it could not set up, and the command never ran; what bwrap says before it is not the command's.
    started = secrets.token_hex(16)
    argv = [bwrap, *_sandbox_args(folder=workspace_root(workspace), network=limits.terminal_network,
                                  tmp_mb=limits.terminal_file_mb),
            "/bin/sh", "-c", f"echo {started}\n{_limits_line(limits)}\n{command}"]
    process = subprocess.Popen(argv, cwd="/", env={"PATH": SANDBOX_PATH}, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                               close_fds=True)
    try:
        output, _ = process.communicate(timeout=limits.terminal_timeout_seconds)
        timed_out = False
    except subprocess.TimeoutExpired:
        # bwrap is the group's leader; its sandbox (--die-with-parent, a pid namespace) dies with it
        _kill_group(process)
        output, _ = process.communicate()
        timed_out = True
    text = output.decode("utf-8", errors="replace").replace("\x00", "")
    bwrap_said, inside, text = text.partition(f"{started}\n")
    if not inside:
        said = bwrap_said.strip()[:500] or f"exit code {process.returncode}"
        return CommandResult(False, "", refused=f"the terminal's sandbox could not be set up, so nothing ran "
                                                f"(bwrap: {said}). {USERNS_HINT}")
    if len(text) > limits.terminal_output_chars:
        text = text[: limits.terminal_output_chars] + f"\n… ({len(text) - limits.terminal_output_chars} more chars)"
    return CommandResult(not timed_out and process.returncode == 0, text, process.returncode, timed_out)


def sandbox_check() -> str:
    """Whether this machine can run the terminal's sandbox: "" when it can, else why and what to do. It
    sets up the same sandbox a command gets, over an empty temporary folder, and runs `true` in it."""
    bwrap = bwrap_path()
    if bwrap is None:
        return _missing_bwrap()
    with tempfile.TemporaryDirectory(prefix="fathom-terminal-check-") as folder:
        try:
            probe = subprocess.run([bwrap, *_sandbox_args(folder=Path(folder), network=False, tmp_mb=1),
                                    "/bin/sh", "-c", "echo ready"], cwd="/", env={"PATH": SANDBOX_PATH},
                                   stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            return f"{bwrap} did not start a sandbox within 30 s"
    if probe.returncode == 0 and probe.stdout == b"ready\n":
        return ""
    said = probe.stderr.decode("utf-8", errors="replace").strip()[:500] or f"exit code {probe.returncode}"
    return f"{bwrap} could not set up the terminal's sandbox ({said}). {USERNS_HINT}"


def bwrap_path() -> str | None:
    """The bwrap binary FATHOM_TERMINAL_BWRAP names (a path, or a name looked up on the server's PATH)."""
    return shutil.which(settings.FATHOM_TERMINAL_BWRAP)


def _missing_bwrap() -> str:
    return (f"the terminal runs commands only in a sandbox, and its tool is missing: {settings.FATHOM_TERMINAL_BWRAP!r} "
            f"(FATHOM_TERMINAL_BWRAP) is not an executable on this machine. To enable it, {INSTALL_HINT}")


def _sandbox_args(*, folder: Path, network: bool, tmp_mb: int) -> list[str]:
    """bwrap's options: the namespaces, the filesystem allow-list, the user and the environment."""
    args = ["--unshare-all", *(["--share-net"] if network else []), "--die-with-parent", "--new-session",
            "--cap-drop", "ALL", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--hostname", "sandbox",
            "--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):  # merged-/usr links, or real folders
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    for pattern in ETC_READABLE:
        for entry in sorted(Path("/etc").glob(pattern)):
            args += ["--ro-bind", str(entry), str(entry)]
    size = str(tmp_mb * 1024 * 1024)
    args += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
             "--size", size, "--tmpfs", "/tmp", "--bind", str(folder), WORKSPACE_DIR,
             "--remount-ro", "/",  # the sandbox's own root (a tmpfs holding the mount points): nothing lands there
             "--chdir", WORKSPACE_DIR, "--clearenv"]
    for name, value in (("PATH", SANDBOX_PATH), ("HOME", WORKSPACE_DIR), ("LANG", "C.UTF-8"), ("TMPDIR", "/tmp")):
        args += ["--setenv", name, value]
    return args


def _limits_line(limits) -> str:
    """The shell's limits line: the limits, or exit 126 without running the command. Not a preexec_fn:
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
