"""Helper dispatches: an approved task run on a configured host, at most once, its output written
back to the lake.

Hosts come from `HelperHost` rows of the workspace and from the FATHOM_HELPER_HOSTS setting (a row
wins over a setting of the same name). Each host names an executor; executors are pluggable
(`executor_register`). The `local` executor runs the host's command on this worker in a fresh
temporary directory, with a scrubbed environment and a timeout, never through a shell.
"""

import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fathom import outbox
from fathom.errors import ApplicationError
from proposals.lake_io import helper_output_write
from proposals.models import HelperHost, HelperJob, HelperJobStatus

logger = logging.getLogger(__name__)

HELPER_TASK = "fires.helper_job_run"
MAX_OUTPUT_CHARS = 200_000
# A job still "running" this long after its timeout lost its worker.
LOST_AFTER_GRACE = timedelta(seconds=120)


@dataclass(frozen=True)
class HostConfig:
    name: str
    executor: str
    command: list[str]
    timeout_seconds: int = 600
    pass_env: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ExecutionResult:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_ms: int


class HelperExecutor:
    """Runs one task on one host. `validate` refuses a host configuration it cannot run."""

    name: str

    def validate(self, host: HostConfig) -> None:
        pass

    def run(self, *, host: HostConfig, task: str, job_id: int) -> ExecutionResult:
        raise NotImplementedError


class LocalExecutor(HelperExecutor):
    """Runs the host's `command` (an argv list; "{task}" in an argument is replaced by the task) in
    a new empty directory that is removed afterwards. The task also arrives on stdin. The child
    sees only PATH, LANG, HOME/TMPDIR (the directory), FATHOM_HELPER_JOB and the variables the host
    lists in pass_env; it runs in its own process group, which is killed at the timeout."""

    name = "local"

    def validate(self, host: HostConfig) -> None:
        if not host.command or not all(isinstance(arg, str) and arg for arg in host.command):
            raise ApplicationError(f"host {host.name!r}: command must be a non-empty list of strings (argv)",
                                   code="invalid_host")
        if host.timeout_seconds < 1 or host.timeout_seconds > settings.FATHOM_HELPER_MAX_TIMEOUT:
            raise ApplicationError(f"host {host.name!r}: timeout_seconds must be between 1 and "
                                   f"{settings.FATHOM_HELPER_MAX_TIMEOUT}", code="invalid_host")

    def run(self, *, host: HostConfig, task: str, job_id: int) -> ExecutionResult:
        workdir = tempfile.mkdtemp(prefix=f"fathom-helper-{job_id}-")
        argv = [arg.replace("{task}", task) for arg in host.command]
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "LANG": "C.UTF-8",
            "HOME": workdir,
            "TMPDIR": workdir,
            "FATHOM_HELPER_JOB": str(job_id),
        }
        env.update({name: os.environ[name] for name in host.pass_env if name in os.environ})
        started = time.monotonic()
        timed_out = False
        try:
            process = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
        except OSError as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            return ExecutionResult(None, "", f"could not start {argv[0]!r}: {exc}", False, 0)
        try:
            stdout, stderr = process.communicate(task.encode(), timeout=host.timeout_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            stdout, stderr = process.communicate()
        finally:
            if process.poll() is None:
                _kill_group(process)
                process.wait()
            shutil.rmtree(workdir, ignore_errors=True)
        return ExecutionResult(
            exit_code=process.returncode,
            stdout=_clip(stdout.decode(errors="replace")),
            stderr=_clip(stderr.decode(errors="replace")),
            timed_out=timed_out,
            duration_ms=int((time.monotonic() - started) * 1000),
        )


_EXECUTORS: dict[str, HelperExecutor] = {}


def executor_register(executor: HelperExecutor) -> HelperExecutor:
    _EXECUTORS[executor.name] = executor
    return executor


def executor_unregister(name: str) -> None:
    _EXECUTORS.pop(name, None)


executor_register(LocalExecutor())


def executor_get(name: str) -> HelperExecutor:
    try:
        return _EXECUTORS[name]
    except KeyError:
        raise ApplicationError(f"unknown executor {name!r}; known: {', '.join(sorted(_EXECUTORS))}",
                               code="unknown_executor") from None


# --- Hosts -----------------------------------------------------------------------------------------

def helper_hosts(*, workspace) -> dict[str, HostConfig]:
    """The hosts this workspace may dispatch to, by name (enabled ones only)."""
    hosts = {name: host_from_setting(name, spec) for name, spec in settings.FATHOM_HELPER_HOSTS.items()}
    for row in HelperHost.objects.filter(workspace=workspace):
        if row.enabled:
            hosts[row.name] = HostConfig(name=row.name, executor=row.executor, command=list(row.command),
                                         timeout_seconds=row.timeout_seconds, pass_env=list(row.pass_env or []),
                                         config=dict(row.config or {}))
        else:
            hosts.pop(row.name, None)
    return hosts


def helper_host_get(*, workspace, name: str) -> HostConfig:
    """The named host, or ApplicationError listing the ones there are."""
    hosts = helper_hosts(workspace=workspace)
    if name not in hosts:
        known = ", ".join(sorted(hosts)) or "none are configured"
        raise ApplicationError(f"unknown host {name!r}; configured hosts: {known}", code="unknown_host")
    return hosts[name]


def host_from_setting(name: str, spec: dict) -> HostConfig:
    return HostConfig(name=name, executor=spec.get("executor", "local"), command=list(spec.get("command", [])),
                      timeout_seconds=int(spec.get("timeout_seconds", 600)),
                      pass_env=list(spec.get("pass_env", [])), config=dict(spec.get("config", {})))


def helper_host_validate(host: HostConfig) -> None:
    executor_get(host.executor).validate(host)


# --- Jobs ------------------------------------------------------------------------------------------

def helper_job_create(*, workspace, host: str, task: str, title: str = "", proposal=None) -> HelperJob:
    """A queued job on a known host, enqueued on the `fires` queue once the transaction commits.
    An unknown host is refused here, before anything exists to run."""
    config = helper_host_get(workspace=workspace, name=host)
    helper_host_validate(config)
    job = HelperJob.objects.create(workspace=workspace, proposal=proposal, host=host, task=task, title=title,
                                   executor=config.executor, timeout_seconds=config.timeout_seconds)
    outbox.enqueue(HELPER_TASK, args=[job.pk])
    return job


def helper_job_run(*, job_id: int) -> HelperJob | None:
    """Run the job if nobody has: the row is claimed with a conditional UPDATE, so a redelivered
    or duplicated task never runs it a second time. Then write its output to the lake."""
    now = timezone.now()
    claimed = HelperJob.objects.filter(pk=job_id, status=HelperJobStatus.QUEUED).update(
        status=HelperJobStatus.RUNNING, started_at=now)
    job = HelperJob.objects.select_related("workspace").filter(pk=job_id).first()
    if job is None:
        return None
    if not claimed:
        _mark_lost_if_stale(job)
        if job.status in (HelperJobStatus.SUCCEEDED, HelperJobStatus.FAILED) and not job.delta_id:
            helper_job_publish(job=job)
        return job

    try:
        host = helper_host_get(workspace=job.workspace, name=job.host)
        executor = executor_get(host.executor)
        executor.validate(host)
    except ApplicationError as exc:
        _finish(job, status=HelperJobStatus.FAILED, error=f"{exc.message}; nothing ran")
        helper_job_publish(job=job)
        return job

    try:
        result = executor.run(host=host, task=job.task, job_id=job.pk)
    except Exception as exc:  # an executor's bug must not leave the job "running" forever
        logger.exception("helper job %s: executor %s failed", job.pk, host.executor)
        _finish(job, status=HelperJobStatus.FAILED, error=f"the {host.executor} executor failed: {exc}")
        helper_job_publish(job=job)
        return job
    succeeded = result.exit_code == 0 and not result.timed_out
    error = ""
    if result.timed_out:
        error = f"timed out after {host.timeout_seconds}s"
    elif result.exit_code != 0:
        error = f"exited with {result.exit_code}" if result.exit_code is not None else result.stderr
    job.exit_code, job.timed_out = result.exit_code, result.timed_out
    job.stdout, job.stderr, job.executor = result.stdout, result.stderr, host.executor
    _finish(job, status=HelperJobStatus.SUCCEEDED if succeeded else HelperJobStatus.FAILED, error=error)
    helper_job_publish(job=job)
    return job


def helper_job_publish(*, job: HelperJob) -> HelperJob:
    """Write the finished job's output to the lake as a delta, once."""
    with transaction.atomic():
        locked = HelperJob.objects.select_for_update().get(pk=job.pk)
        if locked.delta_id:
            return locked
        delta_id = helper_output_write(job=locked)
        if delta_id:
            locked.delta_id = delta_id
            locked.save(update_fields=["delta_id"])
    job.delta_id = locked.delta_id
    return locked


def _finish(job: HelperJob, *, status: str, error: str = "") -> None:
    job.status, job.error, job.finished_at = status, error, timezone.now()
    job.save(update_fields=["status", "error", "finished_at", "exit_code", "timed_out", "stdout", "stderr",
                            "executor"])


def _mark_lost_if_stale(job: HelperJob) -> None:
    if job.status != HelperJobStatus.RUNNING or job.started_at is None:
        return
    limit = timedelta(seconds=job.timeout_seconds or settings.FATHOM_HELPER_MAX_TIMEOUT) + LOST_AFTER_GRACE
    if timezone.now() - job.started_at > limit:
        HelperJob.objects.filter(pk=job.pk, status=HelperJobStatus.RUNNING).update(
            status=HelperJobStatus.LOST, finished_at=timezone.now(),
            error="the worker running it stopped; helper jobs are never run twice")
        job.refresh_from_db()


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _clip(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n[... {len(text) - MAX_OUTPUT_CHARS} more characters cut]"
