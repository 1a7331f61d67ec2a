"""The proxy benches' stack (bench_proxy, bench_loops): a fast fake Ollama (tests/bench/fake_ollama_app.py,
uvicorn), the proxy in front of it (`festinger.proxy.asgi`, as `fathom up` runs it, on the test database)
and the Celery worker `fathom up` runs (it does the work after each proxied response), with the helpers
both benches measure it by."""

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from fathom.processes import proxy_argv
from fathom.supervisor import stack_children
from fathom.tracing.models import TraceEvent
from tests.conftest import REPO_ROOT, wait_for_worker, worker_env
from tests.fathom.stack import free_port

PROMPT = "Please update gnommoweb to use FastAPI instead, and tell me what changed."


@dataclass(frozen=True)
class ProxyStack:
    fake: str  # the fake Ollama's base URL
    proxy: str
    proxy_process: subprocess.Popen
    worker_process: subprocess.Popen


@contextmanager
def proxy_stack(workspace):
    """The fake Ollama, the proxy answering for `workspace` and the worker, started and healthy; stopped
    (the last started first) on leaving."""
    fake_port, proxy_port = free_port(), free_port()
    uvicorn = [sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--no-access-log", "--log-level", "warning"]
    processes = [start([*uvicorn, "--port", str(fake_port), "tests.bench.fake_ollama_app:app"], port=fake_port,
                       health="/api/tags")]
    try:
        fake = f"http://127.0.0.1:{fake_port}"
        env = {**worker_env(), "OLLAMA_HOST": fake, "FATHOM_PROXY_WORKSPACE": workspace.slug,
               "FATHOM_LOG_LEVEL": "WARNING"}
        processes.append(start(proxy_argv(host="127.0.0.1", port=proxy_port), port=proxy_port, env=env))
        # The worker that does the work after each proxied response (memory queue), as `fathom up` runs it.
        worker = next(child for child in stack_children(host="127.0.0.1", port=0) if child.name == "worker")
        processes.append(subprocess.Popen(worker.argv, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True))
        wait_for_worker("fathom@")
        yield ProxyStack(fake=fake, proxy=f"http://127.0.0.1:{proxy_port}", proxy_process=processes[1],
                         worker_process=processes[2])
    finally:
        for process in reversed(processes):
            stop(process)


def start(argv, *, port: int, env=None, health: str = "/", headers=None) -> subprocess.Popen:
    """`argv` started in its own session, once `health` on `port` answers below 500."""
    process = subprocess.Popen(argv, cwd=REPO_ROOT, env=env or os.environ.copy(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}{health}", headers=headers, timeout=2).status_code < 500:
                return process
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"{argv[:4]} exited with {process.returncode}")
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"{argv[:4]} did not start")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def chat_body(stream: bool) -> dict:
    return {"model": "llama3.2", "stream": stream, "messages": [
        {"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": PROMPT}]}


def pct(values, p) -> float:
    """The `p` quantile (0-1) of `values` in seconds, as milliseconds."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


def finished_calls(workspace, expected: int, timeout: float = 120) -> tuple[int, float]:
    """(proxied calls whose after-work is traced, seconds waited for them to reach `expected`)."""
    started = time.monotonic()
    while True:
        finished = TraceEvent.objects.filter(workspace=workspace, kind="festinger.proxy.call.completed").count()
        if finished >= expected or time.monotonic() - started > timeout:
            return finished, time.monotonic() - started
        time.sleep(0.5)
