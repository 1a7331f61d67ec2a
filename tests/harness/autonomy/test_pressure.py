"""Pressure: each documented signal moves it, weights come from the settings, and it reads in a
bounded number of queries whatever the lake's size."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from harness.autonomy.pressure import SIGNAL_NAMES, pressure_read
from harness.autonomy.services import autonomy_settings_get
from harness.runtime.services import session_create
from lake.models import Delta
from lake.services import delta_create, deltas_create, provenance_create


def read(workspace):
    settings = autonomy_settings_get(workspace=workspace)
    return pressure_read(settings=settings, day_start=timezone.now() - timedelta(hours=1))


def test_an_empty_workspace_has_only_the_never_sat_pressure(workspace):
    reading = read(workspace)
    assert set(reading.breakdown) == set(SIGNAL_NAMES)
    assert reading.breakdown["since_sit"]["scaled"] == 1.0
    others = [name for name in SIGNAL_NAMES if name != "since_sit"]
    assert all(reading.breakdown[name]["raw"] == 0 for name in others)
    assert reading.value == pytest.approx(reading.breakdown["since_sit"]["contribution"], abs=1e-3)
    assert 0 <= reading.value <= 1


def test_unprovenanced_material_counts_since_the_last_provenance_and_saturates(workspace):
    old = deltas_create(workspace=workspace, items=[{"content": f"old {i}"} for i in range(3)]).deltas
    provenance_create(workspace=workspace, title="an episode", child_ids=[d.id for d in old])
    deltas_create(workspace=workspace, items=[{"content": f"new {i}"} for i in range(7)])
    deltas_create(workspace=workspace, items=[{"content": "my own card", "source": "harness"}])
    assert read(workspace).breakdown["unprovenanced"]["raw"] == 7
    deltas_create(workspace=workspace, items=[{"content": f"more {i}"} for i in range(80)])
    signal = read(workspace).breakdown["unprovenanced"]
    assert signal["raw"] == 30 and signal["scaled"] == 1.0  # counted up to its saturation, no further


def test_directives_mood_markers_threads_and_conflicts_each_move_their_signal(workspace):
    before = read(workspace)
    delta_create(workspace=workspace, content="look into the rover logs", tags=["kind:directive"])
    delta_create(workspace=workspace, content="+0.2 curiosity: the rover", tags=["kind:mood-shift"])
    delta_create(workspace=workspace, content="-0.1 calm: noise", tags=["kind:mood-shift"])
    moment = delta_create(workspace=workspace, content="a moment")
    for _ in range(3):
        provenance_create(workspace=workspace, title="What is the rover?", child_ids=[moment.id], level=0,
                          tags=["kind:qa-marker"])
    session_create(workspace=workspace, title="a thread")
    after = read(workspace).breakdown
    assert after["directives"]["raw"] == 1
    assert after["mood_shift"]["raw"] == pytest.approx(0.3)
    assert after["duplicate_markers"]["raw"] == 2
    assert after["salient_threads"]["raw"] == 1
    assert read(workspace).value > before.value


def test_dormant_patterns_are_old_provenances_nothing_cited_since(workspace):
    moment = delta_create(workspace=workspace, content="long ago")
    month_ago = timezone.now() - timedelta(days=30)
    episode, cited = (Delta.objects.create(workspace=workspace, created_at=month_ago, content=title, tags=[
        "kind:provenance", "provenance-level:1", f"from:{moment.id}"]) for title in ("old", "old but cited"))
    delta_create(workspace=workspace, content=f"affirms {cited.id}", tags=[f"affirms:{cited.id}"])
    assert read(workspace).breakdown["dormant_patterns"]["raw"] == 1


def test_weights_come_from_the_settings(workspace):
    settings = autonomy_settings_get(workspace=workspace)
    for name in SIGNAL_NAMES:
        setattr(settings, f"weight_{name}", 0.0)
    settings.weight_since_sit = 1.0
    settings.save()
    reading = pressure_read(settings=settings, day_start=timezone.now())
    assert reading.value == 1.0 and reading.top_signal == "since_sit"


def test_it_reads_in_two_queries(workspace):
    settings = autonomy_settings_get(workspace=workspace)
    deltas_create(workspace=workspace, items=[{"content": f"m {i}"} for i in range(20)])
    with CaptureQueriesContext(connection) as queries:
        pressure_read(settings=settings, day_start=timezone.now())
    assert len(queries) == 2
