"""The command lines of Fathom's kinds of process, built in one place: `fathom up` starts one of
each as its children, and `fathom web`, `fathom worker` and `fathom beat` run one alone (on another
machine, say, pointed at the same DATABASE_URL and REDIS_URL).

Processes per command line, for sizing the database's connections: web and the proxy are one uvicorn
process each; a worker is one main process plus `concurrency` prefork pool processes, or one process with
`concurrency` threads (pool "threads": the quality worker); beat is one process."""

import ipaddress
import sys

from django.conf import settings

from fathom.http_protocol import uvicorn_args


def web_argv(*, host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "uvicorn", "fathom.asgi:application", "--host", host, "--port", str(port),
            "--no-access-log", "--timeout-graceful-shutdown", "3", *uvicorn_args()]


def proxy_argv(*, host: str, port: int) -> list[str]:
    """Festinger's Ollama-compatible proxy, an ASGI server of its own (FATHOM_PROXY_*). Its hot path runs
    on uvicorn's fastest parts (httptools, uvloop: chosen by uvicorn when installed); it answers errors in
    Ollama's shape, so it needs none of the web server's envelope, and it reads no client address, so
    it needs no X-Forwarded-* rewriting."""
    return [sys.executable, "-m", "uvicorn", "festinger.proxy.asgi:application", "--host", host, "--port", str(port),
            "--no-access-log", "--no-proxy-headers", "--timeout-graceful-shutdown", "3"]


def worker_argv(*, queues: list[str], concurrency: int, name: str, pool: str = "prefork") -> list[str]:
    """A Celery worker on `queues` with `concurrency` pool processes (or threads, with pool "threads"),
    named `name` (`%h` is the host)."""
    return [sys.executable, "-m", "celery", "-A", "fathom", "worker", "-Q", ",".join(queues), "-P", pool,
            "-c", str(concurrency), "-n", name, "--loglevel", "INFO", "--without-mingle", "--without-gossip"]


def quality_worker_argv(*, name: str = "quality@%h") -> list[str]:
    """The worker of the `quality` queue: verifiers, swarm specialists and the conductor's capability calls
    wait on models and commands, so one process runs FATHOM_QUALITY_WORKER_THREADS of them at once on
    threads."""
    return worker_argv(queues=["quality"], concurrency=settings.FATHOM_QUALITY_WORKER_THREADS, name=name,
                       pool="threads")


def beat_argv() -> list[str]:
    """celery beat with the database scheduler (settings); run exactly one per deployment."""
    return [sys.executable, "-m", "celery", "-A", "fathom", "beat", "--loglevel", "INFO",
            "--pidfile=", "-s", str(settings.DATA_DIR / "celerybeat-schedule")]


def unknown_queues(queues: list[str]) -> list[str]:
    return [queue for queue in queues if queue not in settings.FATHOM_QUEUES]


def proxy_bind_refusal(host: str) -> str | None:
    """Why Festinger's proxy must not start bound to `host`, or None: beyond loopback anyone who reaches
    the port is answered, so it must ask for a shared token (FATHOM_PROXY_TOKEN)."""
    if is_loopback(host) or settings.FATHOM_PROXY_TOKEN:
        return None
    return (f"the proxy would answer anyone who reaches {host}: set FATHOM_PROXY_TOKEN (a shared Bearer token "
            f"every request must carry) to bind it beyond loopback, or bind it to 127.0.0.1")


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 bracketed or not) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
