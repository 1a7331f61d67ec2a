"""`fathom client` against a live stack (uvicorn serving the project, a real worker), driven through
its command in a subprocess: standard input in, the rendered event log out."""

import io
import subprocess
import sys

import pytest
from rich.console import Console

from fathom.llm.scripted import Script
from fathom.services import apikey_create
from harness.runtime.models import AgentProfile, Session, UserProfile
from harness.runtime.session_client import Renderer
from tests.conftest import REPO_ROOT, wait_for, worker_env
from tests.harness.support import wait_for_background_work

ANSWER = "High tide is at noon; the harbour empties by two."


def run_client(*args, key: str, stdin: str = "", timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", "fathom", "client", *args], cwd=REPO_ROOT, input=stdin,
                          env={**worker_env(), "FATHOM_API_KEY": key}, capture_output=True, text=True,
                          timeout=timeout)


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
