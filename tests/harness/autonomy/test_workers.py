"""Autonomy on real worker processes: sweeps racing on two workers start exactly one Sit, which
runs through the fires queue with the offline model, its first prompt the focus pre-pass's output;
a worker killed (SIGKILL) in the middle of a Sit's start leaves its window to a later sweep, which
starts the window's one Sit on another worker."""

import os
import signal
from datetime import UTC, datetime, timedelta

import pytest
from celery import signature
from django.utils import timezone

from harness.autonomy.models import AutonomyDecision
from harness.autonomy.services import SIT_START_GRACE, autonomy_sweep
from harness.fires.models import Fire
from harness.runtime.models import Trigger
from lake.services import deltas_create
from tests.conftest import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_sweeps_racing_on_two_workers_start_exactly_one_sit(workers, workspace, autonomy):
    deltas_create(workspace=workspace, items=[{"content": f"a note on tides {i}"} for i in range(30)])
    autonomy(mode="on", threshold=0.0, window_minutes=1440, sit_rounds=1)
    workers()
    workers()
    for _ in range(4):
        signature("maintenance.autonomy_sweep").apply_async()
    fire = wait_for(lambda: Fire.objects.filter(workspace=workspace, status="finished").first(), timeout=90)
    wait_for(lambda: AutonomyDecision.objects.filter(workspace=workspace).count() == 4, timeout=30)
    sits = list(AutonomyDecision.objects.filter(workspace=workspace, action="sit"))
    assert len(sits) == 1
    others = set(AutonomyDecision.objects.filter(workspace=workspace).exclude(action="sit")
                 .values_list("reason", flat=True))
    assert others <= {"window_taken", "sit_running"}
    assert fire.session_id == sits[0].session_id and fire.autonomous == str(sits[0].pk)
    assert fire.work_set["messages"][0]["content"] == sits[0].focus != ""


def test_a_worker_killed_while_starting_a_sit_leaves_the_window_to_the_next_sweep(
        workers, workspace, autonomy, scripted_llm):
    # given a claimed window whose start runs on a worker, held in the focus call
    autonomy(mode="on", threshold=0.0, window_minutes=1440, sit_rounds=1)
    day = datetime.fromtimestamp(timezone.now().timestamp() // 86400 * 86400, tz=UTC)
    claimed_at = day + timedelta(minutes=1)  # early in today's window, so the later sweep shares it
    scripted_llm.reply(tool_calls=[{"name": "set_focus", "arguments": {"focus": "never said"}}], latency=120)
    first = workers()
    autonomy_sweep(now=claimed_at)
    wait_for(lambda: [r.role for r in scripted_llm.sent] == ["focus"], timeout=60)

    # when the whole worker is killed mid-call (its unacknowledged start waits an hour in the broker)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    scripted_llm.call_tool("set_focus", {"focus": "What do the tide notes have in common?"})
    scripted_llm.call_tool("respond", {"body": "They follow the moon."}).call_tool("skip")
    workers()
    autonomy_sweep(now=claimed_at + timedelta(minutes=1))  # within the grace: the start may still run
    autonomy_sweep(now=claimed_at + SIT_START_GRACE + timedelta(seconds=1))

    # then the window's Sit starts on the other worker, once, its first prompt the new focus
    fire = wait_for(lambda: Fire.objects.filter(workspace=workspace, status="finished").first(), timeout=90)
    decision = AutonomyDecision.objects.get(workspace=workspace, action="sit")
    assert (decision.sit_state, decision.start_attempts) == ("started", 2)
    assert fire.work_set["messages"][0]["content"] == decision.focus == "What do the tide notes have in common?"
    autonomy_sweep(now=claimed_at + 3 * SIT_START_GRACE)
    assert list(Trigger.objects.filter(workspace=workspace, source="sit").values_list("content", flat=True)) == [
        decision.focus]
    assert Fire.objects.filter(workspace=workspace).count() == 1
    assert [r.role for r in scripted_llm.sent].count("focus") == 2
