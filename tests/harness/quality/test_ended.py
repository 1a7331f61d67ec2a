"""Every quality record of a fire that ended before an answer was kept is closed with its reason: a
fire cancelled over REST while its model call is in flight (on a real worker; its message never fires
again, whatever the harness's sweeps do), a fire whose model fails, and the runs such fires left open
before (closed by the migration)."""

import time

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from harness.fires.models import Fire
from harness.fires.tasks import harness_sweep
from harness.quality.models import QualityRun
from harness.runtime.models import Trigger
from tests.conftest import wait_for
from tests.harness.quality.conftest import classification
from tests.harness.support import session_tick


def test_a_fire_whose_model_fails_closes_its_quality_record(api, session, roles, wire_main):
    # given a chat question, and a model that refuses every request
    wire_main.always(400, {"error": {"message": "model not loaded", "type": "invalid_request_error"}})
    assert api.post(f"/v1/sessions/{session.pk}/messages", {"content": "hello there"},
                    format="json").status_code == 202
    roles.classifier.reply(classification("SIMPLE", "chat"))
    # when the session ticks as the worker does
    session_tick(session_id=session.pk)
    # then the fire failed, and its quality record is closed with the fire's stop reason
    fire = Fire.objects.get(session=session)
    run = QualityRun.objects.get(fire=fire)
    assert (fire.status, fire.stop_reason) == ("failed", "error")
    assert (run.state, run.end_reason, run.waiting_for) == ("ended", "error", "")
    assert run.finished_at is not None
    body = api.get(f"/v1/fires/{fire.pk}").json()
    assert body["quality"]["state"] == "ended" and body["quality"]["end_reason"] == "error"
    assert body["verdict"] == {"status": "unchecked", "reasons": []}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_fire_cancelled_mid_call_stays_cancelled_and_closes_its_quality_record(api, session, roles, wire_main,
                                                                                 workers):
    # given a worker, and a model whose first call is held open
    workers()
    roles.classifier.reply(classification("SIMPLE", "chat"))
    wire_main.answer(tool_calls=[("plan", {"question": "q", "steps": ["look", "answer"]})], hold=True)
    wire_main.always(200, None)  # never asked: the answer to a second call would not parse
    sent = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "When is high tide?"}, format="json")
    assert sent.status_code == 202
    assert wire_main.stalled.wait(60), "the fire never reached its model call"
    fire = Fire.objects.get(session=session)
    assert QualityRun.objects.get(fire=fire).state == "running"
    # when the fire is cancelled over REST while that call is in flight
    assert api.post(f"/v1/fires/{fire.pk}/cancel").status_code == 202
    wire_main.release()
    wait_for(lambda: Fire.objects.get(pk=fire.pk).status == "cancelled", timeout=60)
    # then its quality record is closed with the reason, and no record of the harness stays open
    run = QualityRun.objects.get(fire=fire)
    assert (run.state, run.end_reason, run.waiting_for) == ("ended", "cancelled", "")
    assert api.get(f"/v1/fires/{fire.pk}").json()["quality"]["state"] == "ended"
    # and the message is addressed: two sweeps of the harness (what beat sends every 30 s) fire nothing
    message = Trigger.objects.get(session=session, kind=Trigger.Kind.USER_MESSAGE)
    wait_for(lambda: Trigger.objects.get(pk=message.pk).addressed, timeout=30)
    for _ in range(2):
        harness_sweep()
        time.sleep(1)  # a tick the sweep sent would have reached the worker by now
    assert Fire.objects.filter(session=session).count() == 1 and len(wire_main.bodies) == 1
    assert not QualityRun.objects.filter(workspace=session.workspace, state__in=QualityRun.OPEN).exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_migration_closes_the_runs_that_ended_fires_left_open(workspace):
    # given a database before the runs could end: a cancelled fire whose run stayed running, a failed one
    # whose run stayed verifying, and a running fire's run
    before, after = ("quality", "0002_resend_sweep_schedule"), ("quality", "0003_run_ended")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    old = executor.loader.project_state(
        [node for node in executor.loader.graph.leaf_nodes() if node[0] != "quality"] + [before]).apps
    runs = {}
    for status, stop_reason, state in (("cancelled", "cancelled", "running"), ("failed", "error", "verifying"),
                                       ("running", "", "running")):
        fire = old.get_model("fires", "Fire").objects.create(workspace_id=workspace.pk, status=status,
                                                             stop_reason=stop_reason)
        runs[status] = old.get_model("quality", "QualityRun").objects.create(
            workspace_id=workspace.pk, fire_id=fire.pk, state=state, waiting_for="verifier").pk
    # when it migrates forward
    executor = MigrationExecutor(connection)
    executor.migrate([after])
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    # then the runs of the ended fires are closed with their stop reason, the running one is left as it is
    state = {status: QualityRun.objects.values_list("state", "end_reason", "waiting_for").get(pk=pk)
             for status, pk in runs.items()}
    assert state == {"cancelled": ("ended", "cancelled", ""), "failed": ("ended", "error", ""),
                     "running": ("running", "", "verifier")}
