"""`fathom client` against a live stack (uvicorn serving the project, a real worker), driven through
its command in a subprocess: standard input in, the rendered event log out."""

import io
import socket
import subprocess
import sys

import pytest
from rich.console import Console

from fathom.llm.scripted import Script
from fathom.services import apikey_create
from harness.runtime.files import sandbox
from harness.runtime.models import AgentProfile, Session, Task, UserProfile
from harness.runtime.session_client import Progress, Renderer
from tests.conftest import REPO_ROOT, wait_for, worker_env
from tests.harness.conftest import ALL_QUEUES
from tests.harness.support import wait_for_background_work

ANSWER = "High tide is at noon; the harbour empties by two."


def run_client(*args, key: str, stdin: str = "", timeout: float = 180, env: dict | None = None
               ) -> subprocess.CompletedProcess:
    base = {name: value for name, value in worker_env().items()
            if name not in ("FATHOM_URL", "FATHOM_CLIENT_CONFIG")}
    return subprocess.run([sys.executable, "manage.py", "fathom", "client", *args], cwd=REPO_ROOT, input=stdin,
                          env={**base, "FATHOM_API_KEY": key, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def fs_env(tmp_path, settings):
    """A FATHOM_FS_ROOT of the test's own, here and (as environment) for its worker and client."""
    settings.FATHOM_FS_ROOT = tmp_path / "root"
    return {"FATHOM_FS_ROOT": str(tmp_path / "root")}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens on it once the socket closes


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_client_sets_up_profiles_and_a_session_sends_input_and_renders_the_events_live(
        celery_worker, live_server_url, workspace):
    script = Script.install(workspace, roles=("main",))  # the judge's classifier answers offline
    script.reply(ANSWER, chunk_chars=6, chunk_delay=0.02).call_tool("skip", {"reason": "-"})
    key = apikey_create(workspace=workspace, role="operator").secret

    # when the client opens a session with new profiles and sends a line of its input
    done = run_client("--url", live_server_url, "--title", "from the terminal", "--agent", "scout",
                      "--agent-set", "soul_md=curious about tides", "--user", "ada", "--user-set", "user_md=sails",
                      "--user-set", 'preferences={"units": "metric"}', key=key, stdin="When is high tide?\n")

    # then it created the profiles and the session over REST, and printed the turn as it happened
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    session = Session.objects.get(workspace=workspace, title="from the terminal")
    assert AgentProfile.objects.get(workspace=workspace, slug="scout").soul_md == "curious about tides"
    assert UserProfile.objects.get(workspace=workspace, slug="ada").preferences == {"units": "metric"}
    assert session.agent_profile_copy["slug"] == "scout" and session.user_profile_copy["slug"] == "ada"
    assert f"session {session.pk}" in out
    lines = out.splitlines()
    order = [next(i for i, line in enumerate(lines) if marker in line) for marker in (
        "user_message When is high tide?", "turn 1 started", f"agent › {ANSWER}", f"AssistantOutput {ANSWER}",
        "turn 1 ended")]
    assert order == sorted(order), out  # the streamed answer is written on one line, before the output event

    # and attached to the same session later, it shows only what follows and answers the new message
    script.reply("Low tide at six.").call_tool("skip", {"reason": "-"})
    again = run_client("--url", live_server_url, "--session", str(session.pk), "--no-input", "-m", "And low tide?",
                       key=key)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "agent › Low tide at six." in again.stdout and "When is high tide?" not in again.stdout
    wait_for(lambda: session.fires.filter(status="finished").count() == 2)
    wait_for_background_work(session)


@pytest.mark.django_db(transaction=True)
def test_the_client_reports_a_refused_key_and_bad_arguments(live_server_url, workspace):
    refused = run_client("--url", live_server_url, "--no-input", key="not-a-key")
    assert refused.returncode != 0 and "401" in refused.stderr

    key = apikey_create(workspace=workspace, role="operator").secret
    bad = run_client("--url", live_server_url, "--no-input", "--agent-set", "mood=grumpy", key=key)
    assert bad.returncode != 0 and "--agent-set takes FIELD=VALUE" in bad.stderr
    missing = run_client("--url", live_server_url, "--no-input", "--session", "no-such-session", key=key)
    assert missing.returncode != 0 and "404" in missing.stderr


def test_the_client_marks_a_degraded_answer_with_its_reasons():
    # given the client's renderer, and an answer the quality harness kept degraded, then one that passed
    out = io.StringIO()
    renderer = Renderer(Console(file=out, width=400, color_system=None))
    degraded = {"status": "degraded", "reasons": ["Unfounded citation [deadbeefdeadbeef]: no such delta"]}
    # when it renders their AssistantOutput events
    renderer.render({"seq": 7, "kind": "AssistantOutput", "data": {"body": ANSWER, "verdict": degraded}})
    renderer.render({"seq": 8, "kind": "AssistantOutput", "data": {"body": ANSWER,
                                                                   "verdict": {"status": "passed", "reasons": []}}})
    # then the degraded one says so, with why, and the passed one reads as usual
    first, second = out.getvalue().splitlines()
    assert "AssistantOutput (unverified: Unfounded citation [deadbeefdeadbeef]: no such delta)" in first
    assert first.endswith(ANSWER) and second.endswith(f"AssistantOutput {ANSWER}")


def test_against_a_closed_port_it_prints_one_line_naming_the_url_and_exits_non_zero(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    done = run_client("--url", url, "--no-input", key="any", env={"FATHOM_CLIENT_CONFIG": str(tmp_path / "none")})
    assert done.returncode != 0 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot reach Fathom at {url}" in lines[0], done.stderr


def test_the_url_comes_from_the_flag_then_the_environment_then_the_config_file(tmp_path):
    flag, variable, stored = (f"http://127.0.0.1:{closed_port()}" for _ in range(3))
    config = tmp_path / "client.toml"
    config.write_text(f'url = "{stored}"\nkey = "from-the-file"\n')
    env = {"FATHOM_CLIENT_CONFIG": str(config)}
    assert stored in run_client("--no-input", key="", env=env).stderr
    assert variable in run_client("--no-input", key="", env={**env, "FATHOM_URL": variable}).stderr
    assert flag in run_client("--no-input", "--url", flag, key="", env={**env, "FATHOM_URL": variable}).stderr

    config.write_text("url = not toml")
    broken = run_client("--no-input", key="", env=env)
    assert broken.returncode != 0 and f"the client's config file {config} is not TOML" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1


def test_progress_stays_for_the_task_done_turn_a_message_caused():
    # given a message sent, whose turn starts a background task
    progress = Progress()
    progress.message_sent("m1")
    events = [("TurnStarted", {"turn": 1, "trigger_ids": ["m1"]}),
              ("TaskStateChanged", {"task_id": "t1", "state": "pending", "previous": None}),
              ("TurnEnded", {"turn": 1}),
              ("TaskStateChanged", {"task_id": "t1", "state": "succeeded", "previous": "running"}),
              ("TriggerAccepted", {"trigger_id": "d1", "kind": "task_done", "task_id": "t1"}),
              ("TurnStarted", {"turn": 2, "trigger_ids": ["d1"]})]
    # then it is not idle while the task runs, nor once its TaskDone is queued, until that turn ends
    for seq, (kind, data) in enumerate(events, start=1):
        progress.see({"seq": seq, "kind": kind, "data": data})
        assert not progress.idle, kind
    progress.see({"seq": 7, "kind": "TurnEnded", "data": {"turn": 2}})
    assert progress.idle


def test_progress_ignores_tasks_of_turns_it_does_not_own():
    progress = Progress()
    progress.see({"seq": 1, "kind": "TurnStarted", "data": {"turn": 1, "trigger_ids": ["someone-else"]}})
    progress.see({"seq": 2, "kind": "TaskStateChanged", "data": {"task_id": "t9", "state": "pending"}})
    progress.see({"seq": 3, "kind": "TurnEnded", "data": {"turn": 1}})
    assert progress.idle


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_client_stays_for_the_task_done_turn_and_a_profile_refresh_before_no_input_exits(
        live_server_url, workspace, workers, fs_env):
    # given a workspace folder with a note and a worker (the offline agent lists it through a task)
    (sandbox.workspace_root(workspace) / "notes").mkdir(parents=True)
    (sandbox.workspace_root(workspace) / "notes" / "todo.md").write_text("- buy milk\n")
    workers(ALL_QUEUES, env=fs_env)
    key = apikey_create(workspace=workspace, role="operator").secret

    # when the client sends a message that starts a task, then a profile refresh, with --no-input
    done = run_client("--url", live_server_url, "--no-input", "-m", "list fs://notes", "-m", "/refresh", key=key,
                      env=fs_env)

    # then it left only after the TaskDone's turn and the refresh's turn had ended, having shown both
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "task_done task" in out and "ProfileRefreshed" in out, out
    session = Session.objects.get(workspace=workspace)
    assert Task.objects.get(session=session).state == "succeeded"
    last_turn = max(int(line.split("turn ")[1].split()[0]) for line in out.splitlines() if " ended" in line
                    and "turn " in line)
    assert last_turn >= 2 and out.rstrip().splitlines()[-1].endswith("ended"), out
    wait_for_background_work(session)
