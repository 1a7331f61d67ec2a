"""`fathom up` survives crashes: its children die with it (even on kill -9), a second one on the same
data dir is refused, a dead child is restarted with backoff and only a crash loop stops the stack;
`fathom worker` alone, given the URLs, takes fires."""

import os
import signal
import subprocess
import sys
import threading
import uuid

import psutil
import pytest
from django.conf import settings
from django.core.management import CommandError
from django.db import connection

from fathom.celery import app
from fathom.supervisor import Child, RestartPolicy, Supervisor, data_dir_held
from harness.runtime.models import SessionEvent, Trigger
from harness.runtime.services import session_create
from tests.conftest import REPO_ROOT, stop_worker, wait_for, wait_for_worker
from tests.fathom.stack import Stack, fathom, free_port, gone, stack_root

SLEEPER = [sys.executable, "-c", "import time; time.sleep(300)"]
CRASHER = [sys.executable, "-c", "raise SystemExit(3)"]


class Lines(list):
    def write(self, line: str) -> None:
        self.append(line)


def supervise_while(supervisor: Supervisor, action):
    """Run `supervisor` in this (the main) thread while `action()` runs in another; stop it when the
    action returns. Returns (what run() returned, what the action returned)."""
    stopping, result = threading.Event(), {}

    def act():
        try:
            result["action"] = action()
        except BaseException as exc:  # noqa: BLE001 - raised again in the main thread
            result["error"] = exc
        finally:
            stopping.set()

    threading.Thread(target=act, daemon=True).start()
    try:
        ran = supervisor.run(stopping)
    finally:
        stopping.set()
        supervisor.stop()
    if "error" in result:
        raise result["error"]
    return ran, result["action"]


def test_a_child_that_dies_is_restarted_after_a_backoff_and_the_others_keep_running():
    # given two children
    out = Lines()
    dying, other = Child("dying", SLEEPER), Child("other", SLEEPER)
    supervisor = Supervisor([dying, other], out=out, policy=RestartPolicy(first_backoff=0.2))

    def kill_one():
        first = wait_for(lambda: dying.process and dying.process.pid, timeout=60)
        other_pid = wait_for(lambda: other.process and other.process.pid, timeout=60)  # started just after
        # when one is killed
        os.kill(first, signal.SIGKILL)
        second = wait_for(lambda: dying.process and dying.process.pid != first and dying.process.pid, timeout=60)
        return first, second, other_pid

    ran, (first, second, other_pid) = supervise_while(supervisor, kill_one)
    # then it came back as a new process, the other was left alone, and the log says what happened
    assert ran and second != first and other.process.pid == other_pid
    assert "[up] dying was killed by SIGKILL; restarting it in 0.2 s" in out
    assert f"[up] dying restarted (pid {second})" in out


def test_a_child_crashing_again_and_again_stops_the_stack():
    # given a child that exits at once, every time, next to a healthy one
    out = Lines()
    healthy = Child("healthy", SLEEPER)
    supervisor = Supervisor([Child("crasher", CRASHER), healthy], out=out,
                            policy=RestartPolicy(first_backoff=0.05, crash_limit=5, crash_window=60))
    # when it is supervised
    ran = supervisor.run(threading.Event())
    supervisor.stop()
    # then each crash doubled the wait, and the fifth within the window gave up
    assert not ran
    restarts = [line for line in out if line.startswith("[up] crasher exited")]
    assert restarts == [
        "[up] crasher exited with code 3; restarting it in 0.05 s",
        "[up] crasher exited with code 3; restarting it in 0.1 s",
        "[up] crasher exited with code 3; restarting it in 0.2 s",
        "[up] crasher exited with code 3; restarting it in 0.4 s",
        "[up] crasher exited with code 3: 5 crashes within 60 s; stopping the stack",
    ]
    assert healthy.process.returncode == -signal.SIGTERM  # stopped by us, not left running


# A stand-in for a `fathom up` killed where no parent-death signal exists: it holds the data dir and
# records a child of its own, in its own session, that outlives it.
HOLDER = """
import subprocess, sys, time
from pathlib import Path
from fathom.supervisor import data_dir_held
with data_dir_held(Path(sys.argv[1])) as lock:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    lock.record_children([child])
    print(child.pid, flush=True)
    time.sleep(300)
"""


def test_a_data_dir_held_is_refused_and_names_its_holder(tmp_path):
    with data_dir_held(tmp_path) as lock:
        assert lock.previous_owner is None
        with pytest.raises(CommandError, match=rf"in use by another `fathom up` \(pid {os.getpid()}\)"):
            with data_dir_held(tmp_path):
                pass
    with data_dir_held(tmp_path) as lock:  # let go at the end: nobody is reported as crashed
        assert lock.previous_owner is None


def test_a_lock_left_by_a_killed_holder_is_taken_over_and_what_it_left_running_is_stopped(tmp_path):
    # given a holder, killed with SIGKILL, whose child survived it
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "DJANGO_SETTINGS_MODULE": "fathom.settings"})
    orphan = psutil.Process(int(holder.stdout.readline()))
    holder.kill()
    holder.wait()
    assert not gone(orphan)
    # when the data dir is taken
    with data_dir_held(tmp_path) as lock:
        # then the dead holder is named, and its child stopped
        assert lock.previous_owner == str(holder.pid)
        assert lock.orphans_stopped == [orphan.pid]
        wait_for(lambda: gone(orphan), timeout=10)


@pytest.mark.slow
def test_up_runs_a_healthy_stack_and_ctrl_c_stops_everything_within_10s(stack_dir):
    stack = Stack(stack_dir, free_port())
    try:
        health = stack.wait_healthy()
        assert health["workers"]["ok"] and health["beat"]["ok"] and health["database"]["pgvector_version"]
        assert "fathom up: running" in fathom(stack_dir, "status").stdout

        seconds = stack.interrupt()
        assert seconds < 10, stack.output
        assert stack.process.returncode == 0, stack.output
        assert "stopped embedded" in stack.output
        status = fathom(stack_dir, "status").stdout
        assert "postgres: stopped" in status and "fathom up: not running" in status
    finally:
        stack.close()


@pytest.fixture(scope="module")
def running_stack():
    with stack_root() as root:
        stack = Stack(root, free_port())
        try:
            stack.wait_healthy()
            yield stack
        finally:
            stack.close()


@pytest.mark.slow
def test_a_second_up_on_a_data_dir_in_use_is_refused_and_touches_nothing(running_stack):
    # when `fathom up` starts again on the same data dir and port
    second = fathom(running_stack.root, "up", "--port", str(running_stack.port))
    # then it says who holds the folder and exits
    assert second.returncode != 0
    assert f"is in use by another `fathom up` (pid {running_stack.process.pid})" in second.stderr
    # and the first stack still runs, its embedded servers with it
    health = running_stack.wait_healthy()
    assert health["database"]["ok"] and health["redis"]["ok"]
    assert "postgres: running" in fathom(running_stack.root, "status").stdout
    # `fathom down` will not stop the servers under it either
    down = fathom(running_stack.root, "down")
    assert down.returncode != 0 and f"(pid {running_stack.process.pid}) runs on" in down.stderr
    assert running_stack.health()["database"]["ok"]


@pytest.mark.slow
def test_a_killed_worker_is_restarted_and_the_stack_keeps_serving(running_stack):
    # given the stack's worker
    first = running_stack.child_pid("worker")
    # when it is killed (as the OOM killer would)
    os.kill(first, signal.SIGKILL)
    # then the supervisor starts a new one, and the stack is healthy again with it
    second = wait_for(lambda: running_stack.child_pid("worker") != first and running_stack.child_pid("worker"), timeout=60)
    assert "[up] worker was killed by SIGKILL; restarting it in 1 s" in running_stack.output
    health = running_stack.wait_healthy()
    assert health["workers"]["ok"] and running_stack.process.poll() is None
    assert second in [child.pid for child in running_stack.descendants()]


@pytest.mark.slow
def test_kill_9_of_up_takes_its_children_down_and_the_next_up_takes_over(stack_dir):
    # given a running stack: web, a worker with its pool processes, beat
    stack = Stack(stack_dir, free_port())
    try:
        stack.wait_healthy()
        children = stack.descendants()
        worker = stack.child_pid("worker")
        assert {stack.child_pid("web"), worker, stack.child_pid("beat")} <= {child.pid for child in children}
        assert [child for child in children if child.ppid() == worker]  # its pool processes
        # when the supervisor is killed with SIGKILL
        stack.process.kill()
        stack.process.wait()
        # then every process under it is gone too
        wait_for(lambda: all(gone(child) for child in children), timeout=30)
    finally:
        stack.close()
    # and the next `fathom up` on the same data dir and port takes over and runs a healthy stack
    again = Stack(stack_dir, stack.port)
    try:
        health = again.wait_healthy()
        assert health["database"]["ok"]
        assert f"(pid {stack.process.pid}) ended without stopping; taking over" in again.output
        assert again.interrupt() < 10 and again.process.returncode == 0, again.output
    finally:
        again.close()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_started_with_the_urls_only_takes_fires(tmp_path, api):
    # given `fathom worker` on another "machine": only DATABASE_URL and REDIS_URL point at our servers
    name = f"urls-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "FATHOM_DATA_DIR": str(tmp_path / "elsewhere"), "REDIS_URL": settings.REDIS_URL,
           "DATABASE_URL": f"postgresql://postgres@/{connection.settings_dict['NAME']}"
                           f"?host={connection.get_connection_params()['host']}"}
    worker = subprocess.Popen([sys.executable, "manage.py", "fathom", "worker", "--concurrency", "1",
                               "--name", f"{name}@%h"], cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        node = wait_for_worker(name, timeout=60)
        consuming = app.control.inspect(timeout=2).active_queues() or {}
        assert [n for n, queues in consuming.items() if any(q["name"] == "fires" for q in queues)] == [node]
        # when a message is sent to a session
        session = session_create(workspace=api.workspace, title="scale-out")
        sent = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "are you there?"}, format="json")
        assert sent.status_code in (201, 202), sent.content
        # then that worker answers it
        wait_for(lambda: Trigger.objects.get(pk=sent.json()["trigger_id"]).addressed, timeout=90)
        # (the turn ends just after the fire addresses the message)
        wait_for(lambda: SessionEvent.objects.filter(session=session, kind="TurnEnded").exists(), timeout=30)
        assert not (tmp_path / "elsewhere" / "postgres").exists() and not (tmp_path / "elsewhere" / "redis").exists()
    finally:
        stop_worker(worker)
