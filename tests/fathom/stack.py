"""A whole `fathom up` stack in a subprocess, for the tests of the supervisor and the commands."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil

from tests.conftest import REPO_ROOT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def stack_root():
    """A directory for a whole stack's data dir. Not pytest's tmp_path: embedded PostgreSQL runs as
    another user when we are root, and every pytest run resets its base temp dir to mode 0700."""
    path = Path(tempfile.mkdtemp(prefix="fathom-up-"))
    try:
        yield path
    finally:
        fathom(path, "down", timeout=60)  # whatever a failed test left
        shutil.rmtree(path, ignore_errors=True)


def fathom(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`manage.py fathom <args>` on the data dir under `root`, run to its end."""
    return subprocess.run([sys.executable, "manage.py", "fathom", *args], cwd=REPO_ROOT, env=stack_env(root),
                          capture_output=True, text=True, timeout=timeout)


def stack_env(root: Path) -> dict:
    env = {**os.environ, "FATHOM_DATA_DIR": str(root / "data"), "FATHOM_ADMIN_EMAIL": "ops@example.com",
           "FATHOM_ADMIN_PASSWORD": "correct horse battery", "FATHOM_PROXY_PORT": str(proxy_port(root))}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    return env


def proxy_port(root: Path) -> int:
    """The proxy's port of the stack under `root`: free, and the same for every command on it."""
    path = root / "proxy-port"
    if not path.exists():
        path.write_text(str(free_port()))
    return int(path.read_text())


class Stack:
    """`fathom up` on the data dir under `root`, its output read as it comes (so it never blocks on a
    full pipe)."""

    def __init__(self, root: Path, port: int, *, without: tuple[str, ...] = ()):
        self.root, self.port = root, port
        self.lines: list[str] = []
        env = {name: value for name, value in stack_env(root).items() if name not in without}
        self.process = subprocess.Popen([sys.executable, "manage.py", "fathom", "up", "--port", str(port)],
                                        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def health(self) -> dict | None:
        try:
            response = httpx.get(f"http://127.0.0.1:{self.port}/v1/health", timeout=5)
        except httpx.HTTPError:
            return None
        return response.json() if response.status_code == 200 else None

    def wait_healthy(self, timeout: float = 120) -> dict:
        """/v1/health once it answers 200 with a worker and beat seen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.output
            health = self.health()
            if health and health["workers"]["ok"] and health["beat"]["ok"]:
                return health
            time.sleep(0.5)
        raise AssertionError(f"fathom up never became healthy:\n{self.output}")

    def child_pid(self, name: str) -> int | None:
        """The pid of the child `name` as the supervisor last announced it."""
        pids = [int(m.group(1)) for line in self.lines
                if (m := re.match(rf"\[up\] {name} (?:started|restarted) \(pid (\d+)\)", line))]
        return pids[-1] if pids else None

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def interrupt(self, timeout: float = 30) -> float:
        """Ctrl-C; the seconds until it exited."""
        self.process.send_signal(signal.SIGINT)
        started = time.monotonic()
        self.process.wait(timeout=timeout)
        elapsed = time.monotonic() - started
        self._reader.join(timeout=5)
        return elapsed

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip())


def gone(process: psutil.Process) -> bool:
    """Exited (a zombie waiting for a reaper counts as exited)."""
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
