"""Autonomy on real worker processes: sweeps racing on two workers start exactly one Sit, which
runs through the fires queue with the offline model, its first prompt the focus pre-pass's output."""

import pytest
from celery import signature

from harness.autonomy.models import AutonomyDecision
from harness.fires.models import Fire
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
