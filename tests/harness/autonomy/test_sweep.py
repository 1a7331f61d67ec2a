"""The switch and the sweep's decisions: off records nothing, observe records would-sit decisions
and fires nothing, on claims one Sit per window; quiet hours, idleness and the daily caps hold
a Sit back, each with its reason."""

from datetime import UTC, datetime, time, timedelta

import pytest
from django.utils import timezone

from harness.autonomy.models import AutonomyDecision, PressureSample
from harness.autonomy.services import autonomy_sweep, in_quiet_hours, scheduled_sit
from harness.fires.models import Fire
from harness.runtime.models import Trigger
from harness.runtime.services import message_send, session_create
from lake.services import deltas_create
from tests.conftest import run_at_once

NOON = datetime(2026, 11, 25, 12, 0, 30, tzinfo=UTC)


def decisions(workspace):
    return list(AutonomyDecision.objects.filter(workspace=workspace).order_by("id")
                .values_list("action", "reason"))


def test_off_records_nothing(workspace, autonomy):
    autonomy(mode="off", threshold=0)
    autonomy_sweep(now=NOON)
    assert decisions(workspace) == []
    assert not PressureSample.objects.filter(workspace=workspace).exists()


def test_observe_is_the_default_and_an_empty_workspace_stays_below_the_threshold(workspace):
    autonomy_sweep(now=NOON)  # a new workspace: observe; only "never sat" presses
    sample = PressureSample.objects.get(workspace=workspace)
    assert 0 < sample.value < 0.35 and set(sample.breakdown) >= {"unprovenanced", "since_sit"}
    assert decisions(workspace) == [("skip", "below_threshold")]


def test_a_few_dozen_new_deltas_cross_the_default_threshold(workspace):
    deltas_create(workspace=workspace, items=[{"content": f"note {i}"} for i in range(36)])
    autonomy_sweep(now=NOON)
    assert decisions(workspace) == [("would_sit", "observe")]


def test_observe_with_pressure_above_the_threshold_records_would_sit(workspace, autonomy):
    autonomy(threshold=0.0)
    autonomy_sweep(now=NOON)
    autonomy_sweep(now=NOON + timedelta(minutes=1))
    assert decisions(workspace) == [("would_sit", "observe")] * 2
    assert not Trigger.objects.filter(workspace=workspace).exists()
    assert not Fire.objects.filter(workspace=workspace).exists()


def test_below_the_threshold_skips_saying_so(workspace, autonomy):
    autonomy(mode="on", threshold=1.0)
    autonomy_sweep(now=NOON)
    decision = AutonomyDecision.objects.get(workspace=workspace)
    assert (decision.action, decision.reason) == ("skip", "below_threshold")
    assert "< threshold 1.00" in decision.detail


def test_on_claims_one_sit_per_window(workspace, autonomy):
    autonomy(mode="on", threshold=0.0, window_minutes=60)
    autonomy_sweep(now=NOON)
    autonomy_sweep(now=NOON + timedelta(minutes=1))  # same window
    assert decisions(workspace) == [("sit", "pressure"), ("skip", "window_taken")]


def test_quiet_hours_in_the_workspace_time_zone(workspace, autonomy):
    # noon UTC is 21:00 in Tokyo: inside 20:00-07:00 there, outside it in UTC
    autonomy(mode="on", threshold=0.0, time_zone="Asia/Tokyo", quiet_start=time(20), quiet_end=time(7))
    autonomy_sweep(now=NOON)
    autonomy(time_zone="UTC")
    autonomy_sweep(now=NOON + timedelta(minutes=1))
    assert decisions(workspace) == [("skip", "quiet_hours"), ("sit", "pressure")]


@pytest.mark.parametrize(("moment", "quiet"), [(time(23), True), (time(3), True), (time(7), False),
                                               (time(12), False), (time(22), True)])
def test_quiet_hours_may_wrap_midnight(moment, quiet):
    assert in_quiet_hours(moment, time(22), time(7)) is quiet


def test_not_idle_while_the_user_wrote_recently(workspace, autonomy):
    autonomy(mode="on", threshold=0.0, idle_minutes=15)
    message_send(session=session_create(workspace=workspace), content="hello")
    autonomy_sweep(now=timezone.now() + timedelta(minutes=5))
    autonomy_sweep(now=timezone.now() + timedelta(minutes=16))
    assert [a for a, _ in decisions(workspace)] == ["skip", "sit"]
    assert decisions(workspace)[0][1] == "not_idle"


def test_the_daily_sit_cap(workspace, autonomy):
    autonomy(mode="on", threshold=0.0, window_minutes=1, daily_sit_cap=2)
    for minute in range(3):
        autonomy_sweep(now=NOON + timedelta(minutes=minute))
    assert decisions(workspace) == [("sit", "pressure"), ("sit", "pressure"), ("skip", "sit_cap")]


def test_the_daily_token_cap(workspace, autonomy):
    settings = autonomy(mode="on", threshold=0.0, daily_token_cap=100)
    session = session_create(workspace=workspace, tag="autonomy")
    settings.session = session
    settings.save()
    fire = Fire.objects.create(workspace=workspace, session=session, mode="self_directing", question="q",
                               input_tokens=80, output_tokens=30, status="finished")
    Fire.objects.filter(pk=fire.pk).update(created_at=NOON - timedelta(hours=1))
    autonomy_sweep(now=NOON)
    assert decisions(workspace) == [("skip", "token_cap")]


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_sweeps_claim_one_sit(workspace, autonomy):
    autonomy(mode="on", threshold=0.0)
    assert run_at_once([lambda: autonomy_sweep(now=NOON)] * 2) == []
    assert sorted(decisions(workspace)) == [("sit", "pressure"), ("skip", "window_taken")]


def test_a_scheduled_sit_ignores_the_threshold_but_not_the_other_gates(workspace, autonomy):


    autonomy(mode="on", threshold=1.0, cron="0 9 * * *")
    decision = scheduled_sit(workspace_id=workspace.pk)
    assert (decision.action, decision.reason, decision.scheduled) == ("sit", "scheduled", True)
    assert scheduled_sit(workspace_id=workspace.pk).reason == "window_taken"
    autonomy(mode="off")
    assert scheduled_sit(workspace_id=workspace.pk) is None


def test_no_new_sit_while_the_last_one_is_still_working(workspace, autonomy):
    settings = autonomy(mode="on", threshold=0.0, window_minutes=1)
    session = session_create(workspace=workspace, tag="autonomy")
    settings.session = session
    settings.save()
    message_send(session=session, content="round 2", source="sit", author="self")
    autonomy_sweep(now=timezone.now() + timedelta(minutes=30))
    assert decisions(workspace) == [("skip", "sit_running")]
