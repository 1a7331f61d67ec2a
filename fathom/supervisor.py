"""`fathom up`: one foreground process that owns the web server, a worker, the quality worker (threads)
and beat as children.

- Their logs come out prefixed; Ctrl-C (or SIGTERM, SIGHUP) stops them all, and the embedded servers,
  within 10 s.
- One `fathom up` per data dir: it holds a lock file naming its pid and its children, and a second
  one says who holds the folder and exits without touching anything. The lock is an fcntl lock, so
  one left by a supervisor that was killed is free again and taken over.
- The children die with it even when it is killed with SIGKILL (on Linux, a parent-death signal; a
  worker's pool processes die with their worker, as Celery arranges; elsewhere the next `fathom up`
  stops the process groups its lock file names), so a killed stack leaves nothing bound or running
  but the embedded servers, which the next `fathom up` reuses.
- A child that dies is restarted after a backoff (1 s, 2 s, 4 s ... 30 s), and said so; only a child
  crashing again and again (5 times within 60 s) stops the stack, with a non-zero exit."""

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

from fathom import embedded, processes
from fathom.lockfile import file_locked
from fathom.operator_login import login_block, password_store

# Children get this long to stop (a worker finishes its task) before SIGKILL; acks-late tasks killed here
# are redelivered. It leaves the embedded servers' shutdown room within Ctrl-C's 10 s.
STOP_GRACE_SECONDS = 5

LOCK_FILE = "fathom-up.pid"


@dataclass(frozen=True)
class RestartPolicy:
    first_backoff: float = 1.0
    max_backoff: float = 30.0
    crash_limit: int = 5  # crashes of one child within crash_window stop the stack
    crash_window: float = 60.0


@dataclass
class Child:
    name: str
    argv: list[str]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    restart_at: float | None = None
    backoff: float = 0.0
    crashes: deque = field(default_factory=deque, repr=False)
    ready_marker: str = ""  # a line with it says the child has started: its start-up banner is over
    ready: threading.Event = field(default_factory=threading.Event, repr=False)


def stack_children(*, host: str, port: int) -> list[Child]:
    proxy = [Child("proxy", processes.proxy_argv(host=settings.FATHOM_PROXY_HOST, port=settings.FATHOM_PROXY_PORT),
                   ready_marker="Application startup complete")] if settings.FATHOM_PROXY_PORT else []
    return [
        Child("web", processes.web_argv(host=host, port=port), ready_marker="Application startup complete"),
        *proxy,
        Child("worker", processes.worker_argv(queues=[q for q in settings.FATHOM_QUEUES if q != "quality"],
                                              concurrency=settings.FATHOM_WORKER_CONCURRENCY, name="fathom@%h"),
              ready_marker=" ready."),
        Child("quality", processes.quality_worker_argv(), ready_marker=" ready."),
        Child("beat", processes.beat_argv(), ready_marker="beat: Starting"),
    ]


def run_stack(command, *, host: str, port: int) -> None:
    out = command.stdout
    if settings.FATHOM_PROXY_PORT and (refusal := processes.proxy_bind_refusal(settings.FATHOM_PROXY_HOST)):
        raise CommandError(refusal)  # before anything starts
    with data_dir_held(settings.DATA_DIR) as lock:
        if lock.previous_owner:
            out.write(f"[up] the last `fathom up` on this data dir (pid {lock.previous_owner}) ended without "
                      f"stopping; taking over")
        if lock.orphans_stopped:
            out.write(f"[up] stopped what it left running: pids {', '.join(map(str, lock.orphans_stopped))}")
        if settings.EMBEDDED_POSTGRES or settings.EMBEDDED_REDIS:
            embedded.ensure_started(settings.DATA_DIR, postgres=settings.EMBEDDED_POSTGRES,
                                    redis=settings.EMBEDDED_REDIS)
            out.write(f"[up] embedded services under {settings.DATA_DIR}")
        out.write("[up] migrating the database (on the first start this takes a minute or two)")
        call_command("migrate", interactive=False, verbosity=0)
        email, generated = _ensure_operator()
        connections.close_all()  # the supervisor itself holds no database connection while it runs

        stopping = threading.Event()

        def request_stop(signum, _frame):
            stopping.set()

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, request_stop)

        supervisor = Supervisor(stack_children(host=host, port=port), out=out, on_start=lock.record_children)
        out.write(f"[up] starting web, workers and beat; the login block follows once http://{host}:{port}/ "
                  f"answers (admin: /admin/, API docs: /v1/docs/, MCP: /mcp). Ctrl-C stops.")
        threading.Thread(target=_announce_when_ready, daemon=True, kwargs={
            "out": out, "children": supervisor.children, "url": f"http://{host}:{port}/", "email": email,
            "password": generated, "stopping": stopping}).start()
        if settings.FATHOM_PROXY_PORT:
            out.write(f"[up] Festinger's Ollama-compatible proxy on http://{settings.FATHOM_PROXY_HOST}:"
                      f"{settings.FATHOM_PROXY_PORT}/ (workspace {settings.FATHOM_PROXY_WORKSPACE})")
        try:
            gave_up = not supervisor.run(stopping)
        finally:  # on an error of our own too: the children get their grace period, not a SIGKILL
            out.write("[up] stopping")
            started = time.monotonic()
            supervisor.stop()
            out.write(f"[up] web, proxy, workers and beat stopped in {time.monotonic() - started:.1f} s")
        if settings.EMBEDDED_POSTGRES or settings.EMBEDDED_REDIS:
            stopped = embedded.stop_all(settings.DATA_DIR)
            out.write(f"[up] stopped embedded {', '.join(stopped) or 'services'} "
                      f"in {time.monotonic() - started:.1f} s")
    if gave_up:
        sys.exit(1)


class Supervisor:
    """Runs `children` until asked to stop, restarting any that dies (see the module docstring)."""

    def __init__(self, children: list[Child], *, out, policy: RestartPolicy = RestartPolicy(), on_start=None):
        self.children = children
        self.out = out
        self.policy = policy
        self.on_start = on_start  # called with the running children's processes after each start

    def run(self, stopping: threading.Event) -> bool:
        """Start the children and keep them running until `stopping` is set (True), or until one
        crashed too often (False). Call from the main thread: a child's parent-death signal fires when
        the thread that started it ends."""
        for child in self.children:
            self._start(child)
        while not stopping.is_set():
            now = time.monotonic()
            for child in self.children:
                if child.process is not None and child.process.poll() is not None:
                    if not self._schedule_restart(child, now):
                        return False
                elif child.process is None and child.restart_at <= now and not stopping.is_set():
                    self._start(child)
            stopping.wait(0.2)
        return True

    def stop(self) -> None:
        """SIGTERM to each child's process group (last started first), SIGKILL to what is left after
        STOP_GRACE_SECONDS."""
        running = [child for child in reversed(self.children) if child.process is not None]
        for child in running:
            if child.process.poll() is None:
                _signal_group(child.process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child in running:
            try:
                child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(child.process, signal.SIGKILL)
                child.process.wait()

    def _start(self, child: Child) -> None:
        restart = child.restart_at is not None
        # Each child in its own session: Ctrl-C reaches only us, and we stop them in order.
        child.process = subprocess.Popen(child.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, text=True, bufsize=1,
                                         preexec_fn=_parent_death_signal())
        child.started_at, child.restart_at = time.monotonic(), None
        threading.Thread(target=_pump, args=(child, self.out), daemon=True).start()
        self.out.write(f"[up] {child.name} {'restarted' if restart else 'started'} (pid {child.process.pid})")
        if self.on_start is not None:
            self.on_start([c.process for c in self.children if c.process is not None])

    def _schedule_restart(self, child: Child, now: float) -> bool:
        """Log the death of `child` and set when it starts again; False if it crashed too often."""
        code, child.process = child.process.returncode, None
        policy = self.policy
        child.crashes.append(now)
        while child.crashes and child.crashes[0] < now - policy.crash_window:
            child.crashes.popleft()
        if len(child.crashes) >= policy.crash_limit:
            self.out.write(f"[up] {child.name} {_exit_description(code)}: {len(child.crashes)} crashes within "
                           f"{policy.crash_window:g} s; stopping the stack")
            return False
        ran_long = now - child.started_at >= policy.crash_window
        child.backoff = policy.first_backoff if ran_long or not child.backoff else min(
            child.backoff * 2, policy.max_backoff)
        child.restart_at = now + child.backoff
        self.out.write(f"[up] {child.name} {_exit_description(code)}; restarting it in {child.backoff:g} s")
        return True


class DataDirLock:
    """The lock file of a data dir held by this process: our pid on the first line, then one JSON line
    per child ({"pid", "started"}) so that a later `fathom up` can stop what we leave running if we are
    killed where no parent-death signal exists."""

    def __init__(self, handle, *, previous_owner: str | None, orphans_stopped: list[int]):
        self.handle = handle
        self.previous_owner = previous_owner
        self.orphans_stopped = orphans_stopped

    def record_children(self, children: list[subprocess.Popen]) -> None:
        lines = [str(os.getpid())]
        for child in children:
            try:
                lines.append(json.dumps({"pid": child.pid, "started": psutil.Process(child.pid).create_time()}))
            except psutil.NoSuchProcess:
                continue
        self.write(lines)

    def write(self, lines: list[str]) -> None:
        """The lock file holds these lines (the owner's pid first), and nothing else."""
        self.handle.truncate(0)
        self.handle.write("".join(f"{line}\n" for line in lines))
        self.handle.flush()


@contextmanager
def data_dir_held(data_dir: Path) -> Iterator[DataDirLock]:
    """Hold `data_dir` for this process. When a previous holder died without letting go, the lock
    names it (`previous_owner`), and the process groups of its children still running are stopped
    first (`orphans_stopped`). Raises CommandError, touching nothing, when a live process holds it."""
    path = data_dir / LOCK_FILE
    with file_locked(path, wait=False) as handle:
        if handle is None:
            raise CommandError(
                f"{data_dir} is in use by another `fathom up` (pid {_lock_owner(path) or 'unknown'}); stop it "
                f"with Ctrl-C (or kill it), or point FATHOM_DATA_DIR at another folder")
        previous = _lock_owner(path) or None
        lock = DataDirLock(handle, previous_owner=previous, orphans_stopped=_stop_orphans(_lock_children(handle)))
        lock.write([str(os.getpid())])
        try:
            yield lock
        finally:
            handle.truncate(0)  # a clean exit leaves no owner to report as crashed


def data_dir_holder(data_dir: Path) -> str | None:
    """The pid of the `fathom up` holding `data_dir`, or None when none does."""
    path = data_dir / LOCK_FILE
    if not path.exists():
        return None
    with file_locked(path, shared=True, wait=False) as handle:
        if handle is None:
            return _lock_owner(path) or "unknown"
    return None


def stack_status() -> list[str]:
    lines = [f"data dir: {settings.DATA_DIR}"]
    holder = data_dir_holder(settings.DATA_DIR)
    lines.append(f"fathom up: running, pid {holder}" if holder else "fathom up: not running")
    if settings.EMBEDDED_POSTGRES:
        lines.append(_describe(embedded.EmbeddedPostgres(settings.DATA_DIR).status()))
    else:
        lines.append("postgres: external (DATABASE_URL)")
    if settings.EMBEDDED_REDIS:
        lines.append(_describe(embedded.EmbeddedRedis(settings.DATA_DIR).status()))
    else:
        lines.append("redis: external (REDIS_URL)")
    return lines


def _describe(status) -> str:
    if not status.running:
        return f"{status.name}: stopped (data in {status.data})"
    return f"{status.name}: running, pid {status.pid}, at {status.address} (data in {status.data})"


def _ensure_operator() -> tuple[str, str | None]:
    """The operator account exists; a password generated for it (the first start) is kept in the
    data dir's 0600 file. Returns (login, the generated password or None)."""
    from fathom.services import operator_ensure, workspace_default_ensure

    email = os.environ.get("FATHOM_ADMIN_EMAIL", "").strip() or "admin@localhost"
    password = os.environ.get("FATHOM_ADMIN_PASSWORD", "").strip() or None
    user, generated = operator_ensure(workspace=workspace_default_ensure(), email=email, password=password)
    if generated:
        password_store(email=user.username, password=generated)
    return user.username, generated


READY_TIMEOUT = 300


def _announce_when_ready(*, out, children: list[Child], url: str, email: str, password: str | None,
                         stopping: threading.Event) -> None:
    """Once every child has said it started (their banners are behind), the login block, so it ends
    the start's output; after READY_TIMEOUT, the block anyway."""
    deadline = time.monotonic() + READY_TIMEOUT
    for child in children:
        while not child.ready.is_set() and not stopping.is_set() and time.monotonic() < deadline:
            child.ready.wait(0.5)
    if not stopping.is_set():
        for line in login_block(url=url, email=email, password=password):
            out.write(f"[up] {line}")


def _lock_owner(path: Path) -> str:
    return path.read_text().partition("\n")[0].strip()


def _lock_children(handle) -> list[dict]:
    handle.seek(0)
    children = []
    for line in handle.read().splitlines()[1:]:
        try:
            children.append(json.loads(line))
        except ValueError:  # a line cut short by the kill
            continue
    return children


def _stop_orphans(children: list[dict]) -> list[int]:
    """Kill the process groups of `children` that still run (the same processes: a reused pid has
    another start time); the pids of those stopped."""
    stopped = []
    for child in children:
        try:
            process = psutil.Process(child["pid"])
            if process.create_time() != child["started"] or process.status() == psutil.STATUS_ZOMBIE:
                continue
            os.killpg(child["pid"], signal.SIGKILL)  # it is the leader of its own group (a new session)
        except (psutil.NoSuchProcess, ProcessLookupError, PermissionError, KeyError, TypeError):
            continue
        stopped.append(child["pid"])
    return stopped


_PR_SET_PDEATHSIG = 1


def _parent_death_signal():
    """A preexec_fn making the child get SIGKILL when we die, however we die (Linux only; None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the forked child only calls it
    supervisor, kill = os.getpid(), int(signal.SIGKILL)

    def die_with_supervisor():
        prctl(_PR_SET_PDEATHSIG, kill)
        if os.getppid() != supervisor:  # we died between the fork and the prctl
            os.kill(os.getpid(), kill)

    return die_with_supervisor


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:  # the whole group is gone already
        pass


def _exit_description(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def _pump(child: Child, out) -> None:
    for line in child.process.stdout:
        out.write(f"[{child.name}] {line.rstrip()}")
        if child.ready_marker and child.ready_marker in line:
            child.ready.set()
