"""The producers: one model call per run, proposals through the gate (L1/L2 approved at once, L3
waiting), each mirrored into the lake as kind:proposal (and kind:decision once decided), never twice over the same
material; started
by pressure (once per window), by REST and by the CLI."""

from datetime import UTC, datetime, timedelta

import pytest
from celery import signature
from django.core.management import call_command

from harness.autonomy.models import ProducerRun
from harness.autonomy.producers.schedules import BEAT_TASK
from harness.autonomy.producers.services import producer_run, producer_run_request
from harness.autonomy.services import autonomy_settings_update, autonomy_sweep
from lake.models import Delta
from lake.services import deltas_create, provenance_create
from proposals.models import Proposal
from proposals.services import proposal_deny
from tests.conftest import wait_for

NOON = datetime(2026, 11, 25, 12, 0, 30, tzinfo=UTC)


def moments(workspace, n=5, text="tide pool note"):
    return deltas_create(workspace=workspace, items=[{"content": f"{text} {i}"} for i in range(n)]).deltas


def kinds(workspace, kind):
    return list(Delta.objects.filter(workspace=workspace, tags__contains=[kind]))


def test_a_topical_window_run_proposes_episodes_that_the_gate_approves(workspace, scripted_llm):
    notes = moments(workspace)
    run = producer_run_request(workspace=workspace, producer="topical", origin="api")
    scripted_llm.call_tool("propose", {"proposals": [
        {"title": "A week at the tide pools", "summary": "notes", "from_ids": [n.id for n in notes[:3]]}]})
    run = producer_run(run_id=run.pk)
    assert run.status == "done" and run.model_calls == 1 and run.read == 5
    assert len(scripted_llm.sent) == 1 and scripted_llm.sent[0].role == "producer"
    assert notes[4].id in scripted_llm.sent[0].messages[-1].content
    [entry] = run.proposals
    proposal = Proposal.objects.get(pk=entry["id"])
    assert (proposal.status, proposal.level) == ("approved", 1)
    [episode] = [d for d in kinds(workspace, "kind:provenance") if d.level == 1]
    assert episode.title == "A week at the tide pools" and set(episode.from_ids) == {n.id for n in notes[:3]}
    [mirrored] = kinds(workspace, "kind:proposal")
    [decision] = kinds(workspace, "kind:decision")
    assert f"proposal:{proposal.pk}" in mirrored.tags and "decision:approved" in decision.tags
    assert "decided-by:auto-policy:level<=2" in decision.tags and f"result:delta:{episode.id}" in decision.tags
    # run again: the named moments are no longer offered
    again = producer_run_request(workspace=workspace, producer="topical", origin="api")
    scripted_llm.call_tool("propose", {"proposals": []})
    assert producer_run(run_id=again.pk).read == 2


def test_a_reflective_era_waits_for_the_operator(workspace, scripted_llm):
    notes = moments(workspace, 2)
    episode = provenance_create(workspace=workspace, title="episode", child_ids=[n.id for n in notes])
    topic = provenance_create(workspace=workspace, title="topic", child_ids=[episode.id], level=2)
    deltas_create(workspace=workspace, items=[{"content": "I learned I like tides",
                                               "tags": ["kind:standpoint-attestation"]}])
    run = producer_run_request(workspace=workspace, producer="reflective", origin="cli")
    scripted_llm.call_tool("propose", {"proposals": [
        {"level": 3, "title": "The tidal era", "from_ids": [topic.id], "rationale": "who I became"}]})
    run = producer_run(run_id=run.pk)
    [entry] = run.proposals
    assert entry["status"] == "pending"
    assert Proposal.objects.get(pk=entry["id"]).level == 3
    assert len(kinds(workspace, "kind:proposal")) == 1 and kinds(workspace, "kind:decision") == []
    assert not [d for d in kinds(workspace, "kind:provenance") if d.level == 3]


def test_proposals_over_ids_it_was_not_shown_or_too_low_are_reported_not_drafted(workspace, scripted_llm):
    notes = moments(workspace, 3)
    old = deltas_create(workspace=workspace, items=[{"content": "old", "created_at": NOON - timedelta(days=9)}])
    run = producer_run_request(workspace=workspace, producer="topical", origin="api")
    scripted_llm.call_tool("propose", {"proposals": [{"title": "stale", "from_ids": [old.deltas[0].id]},
                                                      {"title": "fine", "from_ids": [notes[0].id, notes[1].id]}]})
    run = producer_run(run_id=run.pk)
    assert "error" in run.proposals[0] and run.proposals[1]["status"] == "approved"
    assert Proposal.objects.filter(workspace=workspace).count() == 1


def test_a_malformed_answer_fails_the_run_saying_why(workspace, scripted_llm):
    moments(workspace, 3)
    run = producer_run_request(workspace=workspace, producer="topical", origin="api")
    scripted_llm.call_tool("propose", {"proposals": [{"title": ""}]})
    run = producer_run(run_id=run.pk)
    assert run.status == "failed" and "ValidationError" in run.error
    assert producer_run(run_id=run.pk).status == "failed"  # claimed once: not run again


def test_offline_the_topical_l2_pass_names_a_topic_over_unheld_episodes(workspace):
    episodes = [provenance_create(workspace=workspace, title=f"episode {i}", child_ids=[m.id])
                for i, m in enumerate(moments(workspace, 3))]
    run = producer_run(run_id=producer_run_request(workspace=workspace, producer="topical", mode="l2",
                                                   origin="beat").pk)
    assert run.status == "done" and run.read == 3
    [topic] = [d for d in kinds(workspace, "kind:provenance") if d.level == 2]
    assert set(topic.from_ids) == {e.id for e in episodes} and topic.title.startswith("Topic: ")


def test_pressure_starts_one_topical_run_per_window(workspace):
    moments(workspace, 40)
    autonomy_settings_update(workspace=workspace, mode="on", threshold=1.0)
    autonomy_sweep(now=NOON)
    autonomy_sweep(now=NOON + timedelta(minutes=1))
    [run] = ProducerRun.objects.filter(workspace=workspace)
    assert (run.producer, run.mode, run.origin) == ("topical", "window", "pressure")


def test_rest_starts_a_run_and_reads_it_in_its_workspace(api, workspace, other_workspace, api_client_for):
    response = api.post("/v1/producers/topical/run", {"mode": "l2", "hours": 48}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["producer"], body["mode"], body["hours"], body["status"]) == ("topical", "l2", 48, "queued")
    assert api.get(f"/v1/producer-runs/{body['id']}").json()["id"] == body["id"]
    assert api_client_for(other_workspace).get(f"/v1/producer-runs/{body['id']}").status_code == 404
    assert api.get("/v1/producer-runs/abc").status_code == 404
    assert api.post("/v1/producers/nonsense/run", {}, format="json").status_code == 404
    assert api.post("/v1/producers/reflective/run", {"mode": "l2"}, format="json").status_code == 400
    assert api.post("/v1/producers/topical/run", {"hours": 0}, format="json").status_code == 400
    viewer = api_client_for(workspace, "viewer")
    assert viewer.post("/v1/producers/topical/run", {}, format="json").status_code == 403


def test_the_cli_runs_a_producer_inline(workspace, capsys):
    moments(workspace, 4)
    call_command("fathom", "produce", "topical", "--workspace", workspace.slug)
    assert "topical run" in capsys.readouterr().out
    run = ProducerRun.objects.get(workspace=workspace)
    assert (run.status, run.origin, len(run.proposals)) == ("done", "cli", 1)


@pytest.mark.parametrize("producer", ["reflective", "topical"])
def test_with_nothing_to_read_a_run_makes_no_model_call(workspace, scripted_llm, producer):
    run = producer_run(run_id=producer_run_request(workspace=workspace, producer=producer, origin="api").pk)
    assert run.status == "done" and run.read == 0 and run.model_calls == 0 and scripted_llm.sent == []


def test_the_reflective_producers_provenance_lands_in_the_inbox_as_a_reflection(workspace, scripted_llm, api):
    deltas_create(workspace=workspace, items=[{"content": f"I noticed {i}", "tags": ["kind:standpoint-attestation"]}
                                              for i in range(2)])
    run = producer_run_request(workspace=workspace, producer="reflective", origin="api")
    offered = list(Delta.objects.filter(workspace=workspace).values_list("id", flat=True))
    scripted_llm.call_tool("propose", {"proposals": [{"level": 1, "title": "What I notice", "from_ids": offered}]})
    producer_run(run_id=run.pk)
    items = api.get("/v1/autonomy/inbox?kind=reflection").json()["results"]
    assert [(i["kind"], i["content"].splitlines()[0]) for i in items] == [("reflection", "What I notice")]


def test_an_operators_later_decision_is_mirrored_when_it_is_taken(workspace, scripted_llm):
    notes = moments(workspace, 2)
    episode = provenance_create(workspace=workspace, title="episode", child_ids=[n.id for n in notes])
    topic = provenance_create(workspace=workspace, title="topic", child_ids=[episode.id], level=2)
    run = producer_run_request(workspace=workspace, producer="reflective", origin="api")
    scripted_llm.call_tool("propose", {"proposals": [{"level": 3, "title": "An era", "from_ids": [topic.id]}]})
    proposal = Proposal.objects.get(pk=producer_run(run_id=run.pk).proposals[0]["id"])
    assert kinds(workspace, "kind:decision") == []  # still pending
    proposal_deny(proposal=proposal, decided_by="operator:user:ada", reason="not an era yet")
    [decision] = kinds(workspace, "kind:decision")
    assert {"decision:denied", "decided-by:operator:user:ada", f"proposal:{proposal.pk}", "producer:reflective"} <= set(
        decision.tags)
    assert decision.content.endswith("not an era yet")


def test_a_producer_proposing_material_already_named_drafts_nothing(workspace, scripted_llm):
    own = deltas_create(workspace=workspace, items=[{"content": f"I reread the tide notes {i}",
                                                     "tags": ["kind:standpoint-attestation"]} for i in range(3)]).deltas
    entries = []
    for _ in range(2):
        run = producer_run_request(workspace=workspace, producer="reflective", origin="api")
        scripted_llm.call_tool("propose", {"proposals": [{"level": 1, "title": "Tides", "from_ids": [d.id for d in own]}]})
        entries += producer_run(run_id=run.pk).proposals
    assert entries[0]["status"] == "approved" and "error" in entries[1]
    assert len([d for d in kinds(workspace, "kind:provenance") if d.level == 1]) == 1


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_reflective_producer_run_three_times_by_beat_makes_one_provenance(workers, workspace, autonomy):
    # given the agent's own reflective writes, autonomy on, and a worker (the offline model answers)
    deltas_create(workspace=workspace, items=[{"content": f"I noticed the tides turn {i}",
                                               "tags": ["kind:standpoint-attestation"]} for i in range(4)])
    autonomy(mode="on")
    workers()
    # when the producers' beat entry fires three times over the same deltas
    for round_ in range(1, 4):
        signature(BEAT_TASK).apply_async()
        wait_for(lambda n=round_: ProducerRun.objects.filter(workspace=workspace, producer="reflective",
                                                             status="done").count() == n, timeout=60)
    # then one reflective provenance names them, drafted once
    reflections = Delta.objects.filter(workspace=workspace, tags__contains=["kind:provenance", "producer:reflective"])
    assert reflections.count() == 1
    assert Proposal.objects.filter(workspace=workspace, producer__startswith="producer:reflective").count() == 1
    assert ProducerRun.objects.filter(workspace=workspace, producer="reflective").count() == 3
