"""`fathom up`: one foreground process that owns the web server, a worker and beat as children.
Their logs come out prefixed; Ctrl-C stops them all (and the embedded servers) within 10 s; a child
that dies on its own takes the stack down with a non-zero exit, never leaving it half running."""

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.core.management import call_command

from fathom import embedded
from fathom.http_protocol import uvicorn_args

# Children get this long to stop (a worker finishes its task) before SIGKILL; acks-late tasks killed here
# are redelivered. It leaves the embedded servers' shutdown room within Ctrl-C's 10 s.
STOP_GRACE_SECONDS = 5


@dataclass
class Child:
    name: str
    argv: list[str]
    process: subprocess.Popen | None = None
    pump: threading.Thread | None = field(default=None, repr=False)


def stack_children(*, host: str, port: int) -> list[Child]:
    python = sys.executable
    concurrency = os.environ.get("FATHOM_WORKER_CONCURRENCY", "2")
    return [
        Child("web", [python, "-m", "uvicorn", "fathom.asgi:application", "--host", host, "--port", str(port),
                      "--no-access-log", "--timeout-graceful-shutdown", "3", *uvicorn_args()]),
        Child("worker", [python, "-m", "celery", "-A", "fathom", "worker", "-Q", ",".join(settings.FATHOM_QUEUES),
                         "-c", concurrency, "-n", "fathom@%h", "--loglevel", "INFO", "--without-mingle",
                         "--without-gossip"]),
        Child("beat", [python, "-m", "celery", "-A", "fathom", "beat", "--loglevel", "INFO",
                       "--pidfile=", "-s", str(settings.DATA_DIR / "celerybeat-schedule")]),
    ]


def run_stack(command, *, host: str, port: int) -> None:
    out = command.stdout
    if settings.EMBEDDED_POSTGRES or settings.EMBEDDED_REDIS:
        embedded.ensure_started(settings.DATA_DIR, postgres=settings.EMBEDDED_POSTGRES,
                                redis=settings.EMBEDDED_REDIS)
        out.write(f"[up] embedded services under {settings.DATA_DIR}")
    call_command("migrate", interactive=False, verbosity=0)
    _ensure_operator(out)

    children = stack_children(host=host, port=port)
    stopping = threading.Event()

    def request_stop(signum, _frame):
        stopping.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    for child in children:
        # Each child in its own session: Ctrl-C reaches only us, and we stop them in order.
        child.process = subprocess.Popen(child.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, text=True, bufsize=1)
        child.pump = threading.Thread(target=_pump, args=(child, out), daemon=True)
        child.pump.start()
    out.write(f"[up] Fathom on http://{host}:{port}/  (admin: /admin/, API docs: /v1/docs/). Ctrl-C stops.")

    died = None
    while not stopping.is_set() and died is None:
        died = next((c for c in children if c.process.poll() is not None), None)
        stopping.wait(0.5)

    if died is not None:
        out.write(f"[up] {died.name} exited with code {died.process.returncode}; stopping the stack")
    else:
        out.write("[up] stopping")
    started = time.monotonic()
    _stop_children(children)
    out.write(f"[up] web, worker and beat stopped in {time.monotonic() - started:.1f} s")
    if settings.EMBEDDED_POSTGRES or settings.EMBEDDED_REDIS:
        stopped = embedded.stop_all(settings.DATA_DIR)
        out.write(f"[up] stopped embedded {', '.join(stopped) or 'services'} in {time.monotonic() - started:.1f} s")
    if died is not None:
        sys.exit(1)


def stack_status() -> list[str]:
    lines = [f"data dir: {settings.DATA_DIR}"]
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


def _ensure_operator(out) -> None:
    from fathom.services import operator_ensure, workspace_default_ensure

    email = os.environ.get("FATHOM_ADMIN_EMAIL", "").strip() or "admin@localhost"
    password = os.environ.get("FATHOM_ADMIN_PASSWORD", "").strip() or None
    workspace = workspace_default_ensure()
    user, generated = operator_ensure(workspace=workspace, email=email, password=password)
    if generated:
        out.write(f"[up] operator account created: {user.username} / {generated}  (shown once; change it in /admin/)")


def _pump(child: Child, out) -> None:
    for line in child.process.stdout:
        out.write(f"[{child.name}] {line.rstrip()}")


def _stop_children(children: list[Child]) -> None:
    for child in reversed(children):
        if child.process.poll() is None:
            os.killpg(child.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for child in children:
        remaining = max(0.1, deadline - time.monotonic())
        try:
            child.process.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            os.killpg(child.process.pid, signal.SIGKILL)
            child.process.wait()
