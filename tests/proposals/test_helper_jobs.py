"""Helper dispatches: the local executor's sandbox, unknown hosts, and running exactly once."""

import json
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import override_settings
from django.utils import timezone

from fathom.celery import app
from fathom.errors import ApplicationError
from lake.models import Delta
from proposals import helper_jobs
from proposals.models import HelperHost, HelperJob, HelperJobStatus, Proposal, ProposalStatus
from proposals.services import proposal_approve, proposal_draft
from tests.proposals.conftest import python_host

COUNTING_SCRIPT = "import sys; open(sys.argv[1], 'a').write('ran\\n'); print('done:', sys.stdin.read())"


def counting_host(workspace, marker, name="sandbox"):
    """A host whose command appends a line to `marker` each time it runs."""
    return dispatch_host(workspace, name, [sys.executable, "-c", COUNTING_SCRIPT, str(marker)])


def dispatch_host(workspace, name, command, **fields):
    return HelperHost.objects.create(workspace=workspace, name=name, command=command, timeout_seconds=30, **fields)


def draft_dispatch(workspace, host="sandbox", task="summarise the repo"):
    return proposal_draft(workspace=workspace, tool="helper-dispatch", title="Summarise", producer="fire:f1",
                          payload={"host": host, "task": task})


def run_local(host_row, task="the task", job_id=1) -> helper_jobs.ExecutionResult:
    host = helper_jobs.helper_host_get(workspace=host_row.workspace, name=host_row.name)
    return helper_jobs.LocalExecutor().run(host=host, task=task, job_id=job_id)


# --- the local executor ------------------------------------------------------------------------------

def test_the_local_executor_runs_in_a_fresh_directory_that_is_removed_afterwards(workspace):
    host = python_host(workspace, script="import os, json; print(json.dumps([os.getcwd(), os.listdir('.')]))")

    first = run_local(host)
    second = run_local(host)

    (cwd_one, listing), (cwd_two, _) = json.loads(first.stdout), json.loads(second.stdout)
    assert listing == [] and cwd_one != cwd_two
    assert first.exit_code == 0 and not first.timed_out
    assert not Path(cwd_one).exists() and not Path(cwd_two).exists()


def test_the_local_executor_scrubs_the_environment_but_passes_what_the_host_allows(workspace, monkeypatch):
    monkeypatch.setenv("FATHOM_SECRET_FOR_TEST", "hunter2")
    monkeypatch.setenv("HELPER_ALLOWED", "yes")
    host = python_host(workspace, script="import os, json; print(json.dumps(dict(os.environ)))",
                       pass_env=["HELPER_ALLOWED"])

    env = json.loads(run_local(host, job_id=7).stdout)

    assert "FATHOM_SECRET_FOR_TEST" not in env and "DATABASE_URL" not in env
    assert env["HELPER_ALLOWED"] == "yes" and env["FATHOM_HELPER_JOB"] == "7"
    assert env["HOME"] == env["TMPDIR"] and "fathom-helper-7-" in env["HOME"]


def test_the_task_is_an_argument_never_shell_syntax(workspace, tmp_path):
    pwned = tmp_path / "pwned"
    host = dispatch_host(workspace, "echo", [sys.executable, "-c", "import sys; print(sys.argv[1])", "{task}"])
    task = f"hello; touch {pwned} && echo $(touch {pwned}) `touch {pwned}`"

    result = run_local(host, task=task)

    assert result.stdout.strip() == task
    assert not pwned.exists()


def test_the_local_executor_kills_a_task_at_its_timeout(workspace):
    host = python_host(workspace, script="import time; print('starting', flush=True); time.sleep(60)", timeout=1)

    started = time.monotonic()
    result = run_local(host)

    assert result.timed_out and time.monotonic() - started < 10
    assert "starting" in result.stdout


def test_a_command_that_cannot_start_is_reported_not_raised(workspace):
    host = dispatch_host(workspace, "missing", ["/nonexistent/helper-binary"])

    result = run_local(host)

    assert result.exit_code is None and "could not start" in result.stderr


# --- hosts -------------------------------------------------------------------------------------------

def test_an_unknown_host_is_refused_at_draft_time(workspace):
    python_host(workspace, name="laptop")

    with pytest.raises(ApplicationError, match="unknown host 'mainframe'; configured hosts: laptop"):
        draft_dispatch(workspace, host="mainframe")
    assert not Proposal.objects.exists() and not HelperJob.objects.exists()


def test_a_disabled_host_or_another_workspaces_host_is_unknown(workspace, other_workspace):
    python_host(workspace, name="off", enabled=False)
    python_host(other_workspace, name="theirs")

    for name in ("off", "theirs"):
        with pytest.raises(ApplicationError, match=f"unknown host '{name}'"):
            draft_dispatch(workspace, host=name)


def test_hosts_from_settings_are_available_to_every_workspace(workspace):
    hosts = {"shared": {"executor": "local", "command": [sys.executable, "-c", "print(1)"], "timeout_seconds": 5}}
    with override_settings(FATHOM_HELPER_HOSTS=hosts):
        proposal = draft_dispatch(workspace, host="shared")
    assert proposal.status == ProposalStatus.PENDING


def test_a_host_removed_before_approval_fails_the_proposal_and_queues_nothing(workspace, tmp_path):
    host = counting_host(workspace, tmp_path / "marker")
    proposal = draft_dispatch(workspace)
    host.delete()

    failed = proposal_approve(proposal=proposal, decided_by="operator:ops")

    assert failed.status == ProposalStatus.FAILED and "unknown host 'sandbox'" in failed.failure_reason
    assert not HelperJob.objects.exists()


def test_a_host_removed_after_approval_never_runs_the_job(workspace, tmp_path, django_capture_on_commit_callbacks):
    marker = tmp_path / "marker"
    host = counting_host(workspace, marker)
    with django_capture_on_commit_callbacks(execute=False):
        proposal = proposal_approve(proposal=draft_dispatch(workspace), decided_by="operator:ops")
    host.delete()

    job = helper_jobs.helper_job_run(job_id=int(proposal.result_ref.removeprefix("helper-job:")))

    assert job.status == HelperJobStatus.FAILED and "nothing ran" in job.error
    assert not marker.exists()
    assert "helper-status:failed" in Delta.objects.get(pk=job.delta_id).tags  # the lake knows it did not run


# --- running once ------------------------------------------------------------------------------------

def test_approval_queues_one_job_on_the_fires_queue_after_commit(workspace, tmp_path,
                                                                  django_capture_on_commit_callbacks):
    counting_host(workspace, tmp_path / "marker")
    drafted = draft_dispatch(workspace)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        proposal = proposal_approve(proposal=drafted, decided_by="operator:ops")

    job = HelperJob.objects.get()
    assert proposal.result_ref == f"helper-job:{job.pk}" and job.status == HelperJobStatus.QUEUED
    assert len(callbacks) == 2  # the job, and the embedding of the decision's delta in the lake
    from proposals.tasks import helper_job_run

    assert app.amqp.router.route({}, helper_job_run.name)["queue"].name == "fires"


def test_running_a_job_twice_runs_the_helper_once(workspace, tmp_path, django_capture_on_commit_callbacks):
    marker = tmp_path / "marker"
    counting_host(workspace, marker)
    with django_capture_on_commit_callbacks(execute=False):
        proposal = proposal_approve(proposal=draft_dispatch(workspace), decided_by="operator:ops")
    job_id = int(proposal.result_ref.removeprefix("helper-job:"))

    first = helper_jobs.helper_job_run(job_id=job_id)
    second = helper_jobs.helper_job_run(job_id=job_id)

    assert marker.read_text() == "ran\n"
    assert first.status == second.status == HelperJobStatus.SUCCEEDED
    job = HelperJob.objects.get(pk=job_id)
    assert "done: summarise the repo" in job.stdout
    # its output landed in the lake, once
    outputs = Delta.objects.filter(workspace=workspace, tags__contains=["kind:helper-output"])
    assert [delta.id for delta in outputs] == [job.delta_id]
    delta = outputs[0]
    assert {f"helper-job:{job_id}", "helper-host:sandbox", f"approved-from-proposal:{proposal.pk}",
            "helper-status:succeeded", "exit-code:0"} <= set(delta.tags)
    assert "done: summarise the repo" in delta.content and delta.source == "helper:sandbox"


def test_a_job_left_running_past_its_timeout_is_marked_lost_not_rerun(workspace, tmp_path):
    marker = tmp_path / "marker"
    counting_host(workspace, marker)
    job = HelperJob.objects.create(workspace=workspace, host="sandbox", task="t", status=HelperJobStatus.RUNNING,
                                   timeout_seconds=30, started_at=timezone.now() - timedelta(hours=1))

    job = helper_jobs.helper_job_run(job_id=job.pk)

    assert job.status == HelperJobStatus.LOST and not marker.exists()


def test_a_pluggable_executor_runs_jobs_of_its_hosts_and_a_broken_one_fails_the_job(workspace):
    class Recording(helper_jobs.HelperExecutor):
        name = "recording"
        tasks = []

        def run(self, *, host, task, job_id):
            if task == "break":
                raise RuntimeError("boom")
            self.tasks.append((host.name, task))
            return helper_jobs.ExecutionResult(0, "remote output", "", False, 5)

    helper_jobs.executor_register(Recording())
    try:
        dispatch_host(workspace, "remote", ["unused"], executor="recording")
        ok = HelperJob.objects.create(workspace=workspace, host="remote", task="do it")
        broken = HelperJob.objects.create(workspace=workspace, host="remote", task="break")

        ok, broken = helper_jobs.helper_job_run(job_id=ok.pk), helper_jobs.helper_job_run(job_id=broken.pk)
    finally:
        helper_jobs.executor_unregister("recording")

    assert Recording.tasks == [("remote", "do it")]
    assert (ok.status, ok.stdout) == (HelperJobStatus.SUCCEEDED, "remote output")
    assert broken.status == HelperJobStatus.FAILED and "boom" in broken.error


@pytest.mark.worker
def test_an_approved_dispatch_runs_once_on_a_worker_even_when_redelivered(transactional_db, celery_worker,
                                                                          workspace, tmp_path):
    marker = tmp_path / "marker"
    counting_host(workspace, marker)

    proposal = proposal_approve(proposal=draft_dispatch(workspace), decided_by="operator:ops")
    job_id = int(proposal.result_ref.removeprefix("helper-job:"))
    job = _wait_for_job(job_id, {HelperJobStatus.SUCCEEDED, HelperJobStatus.FAILED})
    # The broker hands the same job to a worker again.
    app.send_task(helper_jobs.HELPER_TASK, args=[job_id])
    app.send_task(helper_jobs.HELPER_TASK, args=[job_id])
    ping = app.send_task("platform.ping", args=["after"], queue="fires")
    ping.get(timeout=30)  # the fires queue is drained in order by the single worker process

    assert job.status == HelperJobStatus.SUCCEEDED, job.error
    assert marker.read_text() == "ran\n"
    output = Delta.objects.get(workspace=workspace, tags__contains=[f"helper-job:{job_id}"])
    assert "done: summarise the repo" in output.content and HelperJob.objects.get(pk=job_id).delta_id == output.id


def _wait_for_job(job_id, statuses, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = HelperJob.objects.get(pk=job_id)
        if job.status in statuses:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} is still {HelperJob.objects.get(pk=job_id).status}")
