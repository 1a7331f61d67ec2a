"""REST of the quality harness: POST /v1/fires/{id}/feedback (bad input, isolation) and the quality
record in GET /v1/fires/{id}."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from fathom.supervisor import stack_children
from harness.fires.models import Fire
from harness.fires.services import fire_create
from harness.quality.models import Feedback, QualityAttempt, QualityRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def answered(workspace):
    fire = fire_create(workspace=workspace, mode="introspective", question="what is up?")
    Fire.objects.filter(pk=fire.pk).update(status="finished", phase="done", response={"body": "all is well"})
    fire.refresh_from_db()
    run = QualityRun.objects.create(workspace=workspace, fire=fire, state="done", verifier_score=0.4,
                                    complexity={"level": "SIMPLE", "workflow_type": "chat"})
    QualityAttempt.objects.create(workspace=workspace, run=run, number=1, verifier={"score": 0.4},
                                  contract={"passed": True})
    return fire


def test_feedback_is_recorded_with_the_verifier_score_it_answers(api, answered):
    response = api.post(f"/v1/fires/{answered.pk}/feedback", {"rating": "up", "comment": "spot on"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["rating"], body["comment"], body["verifier_score"]) == ("up", "spot on", 0.4)
    assert body["author"].startswith("operator:apikey:")
    assert Feedback.objects.get().fire_id == answered.pk


@pytest.mark.parametrize("body", [{}, {"rating": "sideways"}, {"rating": None}, {"rating": "up", "comment": 3 * [1]},
                                  {"rating": "up", "comment": "x" * 4001}, []])
def test_bad_feedback_is_a_400(api, answered, body):
    response = api.post(f"/v1/fires/{answered.pk}/feedback", body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()["error"]) == {"code", "message", "details"}
    assert not Feedback.objects.exists()


@pytest.mark.parametrize("fire_id", ["nope", "00000000-0000-0000-0000-000000000000", "1", "%00"])
def test_feedback_on_a_fire_that_does_not_exist_is_a_404(api, fire_id):
    response = api.post(f"/v1/fires/{fire_id}/feedback", {"rating": "up"}, format="json")
    assert response.status_code in (400, 404), response.content
    assert "error" in response.json()


def test_feedback_on_a_fire_still_running_is_a_400(api, workspace):
    fire = fire_create(workspace=workspace, mode="introspective", question="q")
    response = api.post(f"/v1/fires/{fire.pk}/feedback", {"rating": "down"}, format="json")
    assert response.status_code == 400 and "has answered" in response.json()["error"]["message"]


def test_another_workspace_can_neither_read_the_quality_record_nor_give_feedback(api_client_for, other_workspace,
                                                                                 answered):
    theirs = api_client_for(other_workspace)
    assert theirs.get(f"/v1/fires/{answered.pk}").status_code == 404
    assert theirs.post(f"/v1/fires/{answered.pk}/feedback", {"rating": "down"}, format="json").status_code == 404
    assert not Feedback.objects.exists()


def test_get_fire_shows_its_quality_record_and_null_without_one(api, workspace, answered):
    quality = api.get(f"/v1/fires/{answered.pk}").json()["quality"]
    assert quality["complexity"]["level"] == "SIMPLE" and quality["attempts"][0]["verifier"]["score"] == 0.4
    bare = fire_create(workspace=workspace, mode="introspective", question="q")
    assert api.get(f"/v1/fires/{bare.pk}").json()["quality"] is None


def test_fathom_up_runs_the_quality_queue_on_a_thread_pool_worker_sized_by_the_setting(settings):
    children = {child.name: child.argv for child in stack_children(host="127.0.0.1", port=8000)}
    quality, worker = children["quality"], children["worker"]
    assert quality[quality.index("-Q") + 1] == "quality" and quality[quality.index("-P") + 1] == "threads"
    assert int(quality[quality.index("-c") + 1]) == settings.FATHOM_QUALITY_WORKER_THREADS >= 8
    assert settings.FATHOM_QUALITY_WORKER_THREADS <= settings.FATHOM_DB_POOL_MAX_SIZE
    assert "quality" not in worker[worker.index("-Q") + 1].split(",")


def test_fathom_quality_shows_and_sets_a_workspaces_settings_as_rest_does(workspace, other_workspace, api):
    out = io.StringIO()
    call_command("fathom", "quality", "set", "--workspace", workspace.slug,
                 '{"swarm_enabled": true, "contracts": {"drafting": {"min_documents": 2}}}', stdout=out)
    assert json.loads(out.getvalue())["contracts"] == {"drafting": {"min_documents": 2}}
    assert api.get("/v1/quality/settings").json() == json.loads(out.getvalue())
    out = io.StringIO()
    call_command("fathom", "quality", "show", "--workspace", other_workspace.slug, stdout=out)
    assert json.loads(out.getvalue())["contracts"] == {} and not json.loads(out.getvalue())["swarm_enabled"]


@pytest.mark.parametrize(("args", "message"), [
    (["show", "--workspace", "nope"], "no workspace 'nope'"),
    (["set", "--workspace", "{slug}", "{not json"], "not JSON"),
    (["set", "--workspace", "{slug}", '{"contracts": {"chat": {"min_output_chars": -1}}}'], "min_output_chars"),
    (["set", "--workspace", "{slug}", '{"contracts": {"poetry": {}}}'], "poetry"),
])
def test_fathom_quality_refuses_bad_input_with_a_message(workspace, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("fathom", "quality", *[arg.replace("{slug}", workspace.slug) for arg in args])
