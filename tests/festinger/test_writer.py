"""The write path's service: the writer asked once per concept, its answer validated, the call cap,
the lock that keeps one write per concept in flight."""

import json

import pytest

from fathom.llm.scripted import Script
from fathom.redis_client import get_redis
from festinger.models import Concept, Conflict, Edge
from festinger.services import insert_fact, world_ensure
from festinger.writer import concept_write, validate

DIMENSIONS = ["geography", "membership", "owned-by", "runs-on", "tech", "type"]


@pytest.fixture
def writer(workspace):
    world_ensure(workspace=workspace)
    script = Script.install(workspace, roles=("writer",))
    yield script
    script.reset()


def answer(*triples):
    return json.dumps({"triples": [dict(zip(("concept", "parent", "dimension", "is_isa", "confidence"), t,
                                            strict=True)) for t in triples]})


def test_the_writers_triples_are_placed_and_the_concept_becomes_novel(workspace, writer):
    insert_fact(workspace=workspace, concept="zorblax", parent="queue", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    writer.reply(answer(("zorblax", "message broker", "type", True, 0.9), ("zorblax", "Erlang", "tech", False, 0.7)))

    result = concept_write(workspace_id=workspace.pk, token="zorblax", context=["restart zorblax now"])

    assert (result["status"], result["model_calls"]) == ("written", 1)
    assert [p["outcome"] for p in result["placed"]] == ["conflict", "edge"]  # 'type' was taken: queued
    assert Conflict.objects.get(workspace=workspace).incoming_parent.token == "message_broker"
    assert Edge.objects.get(workspace=workspace, concept__token="zorblax", dimension__token="tech").source == "cloud_llm"
    assert Concept.objects.get(workspace=workspace, token="zorblax").novelty == 1.0
    question = writer.sent[0].messages[-1].content
    assert "What is `zorblax`?" in question and "restart zorblax now" in question
    assert "geography, membership, owned-by, runs-on, tech, type" in question

    assert concept_write(workspace_id=workspace.pk, token="zorblax")["status"] == "known"
    assert len(writer.sent) == 1  # a known concept costs no model call


def test_an_unusable_answer_is_sent_back_once_then_the_cap_stops_it(workspace, writer):
    writer.reply("not json at all").reply(answer(("zorblax", "thing", "colour", False, 0.9)))

    result = concept_write(workspace_id=workspace.pk, token="zorblax")

    assert (result["status"], result["model_calls"], result["placed"]) == ("unusable", 2, [])
    assert "'colour', not one of the list" in result["rejected"][0]
    assert "not JSON" in writer.sent[1].messages[-1].content  # the feedback
    assert writer.pending == 0 and len(writer.sent) == 2  # the cap (writer_max_calls = 2)
    assert Concept.objects.filter(workspace=workspace, token="zorblax", novelty__gt=0).count() == 0


def test_one_write_per_concept_is_in_flight(workspace, writer):
    key = f"festinger:{workspace.pk}:writing:zorblax"
    get_redis().set(key, "another worker", ex=60)
    try:
        result = concept_write(workspace_id=workspace.pk, token="zorblax")
    finally:
        get_redis().delete(key)

    assert (result["status"], result["model_calls"]) == ("in_flight", 0)
    assert writer.sent == []


def test_a_failed_model_call_fails_the_write_and_releases_the_concept(workspace, writer):
    writer.fail("bad_request", "no")

    result = concept_write(workspace_id=workspace.pk, token="zorblax")

    assert (result["status"], result["model_calls"]) == ("failed", 1)
    assert get_redis().get(f"festinger:{workspace.pk}:writing:zorblax") is None


@pytest.mark.parametrize(("item", "problem"), [
    ({"concept": "other", "parent": "x", "dimension": "type", "is_isa": True, "confidence": 1}, "is about 'other'"),
    ({"concept": "zorblax", "parent": "", "dimension": "type", "is_isa": True, "confidence": 1}, "no usable parent"),
    ({"concept": "zorblax", "parent": "zorblax", "dimension": "type", "is_isa": True, "confidence": 1},
     "no usable parent"),
    ({"concept": "zorblax", "parent": "x", "dimension": "colour", "is_isa": True, "confidence": 1}, "not one of"),
    ({"concept": "zorblax", "parent": "x", "dimension": "type", "is_isa": "yes", "confidence": 1}, "is_isa"),
    ({"concept": "zorblax", "parent": "x", "dimension": "type", "is_isa": True, "confidence": 1.5}, "confidence"),
    ({"concept": "zorblax", "parent": "x", "dimension": "type", "is_isa": True, "confidence": True}, "confidence"),
    ("a string", "not an object"),
])
def test_validate_refuses_what_cannot_be_placed(item, problem):
    usable, problems = validate(json.dumps({"triples": [item]}), token="zorblax", dimensions=DIMENSIONS)

    assert usable == [] and problem in problems[0]


def test_validate_normalises_tokens_with_the_compound_rule():
    usable, problems = validate(answer(("Zorblax", "Glitch University", "membership", False, 0.8)),
                                token="zorblax", dimensions=DIMENSIONS)

    assert problems == [] and usable == [{"concept": "zorblax", "parent": "glitch_university",
                                          "dimension": "membership", "is_isa": False, "confidence": 0.8}]


def test_a_write_whose_lock_expired_does_not_free_the_lock_another_write_took(workspace, writer, monkeypatch):
    key = f"festinger:{workspace.pk}:writing:zorblax"

    def outlived_its_lock(workspace, token, context, conversation):
        get_redis().set(key, "another worker", ex=60)  # the lock expired and another write took it
        return {"status": "written", "token": token, "model_calls": 0, "placed": [], "rejected": []}

    monkeypatch.setattr("festinger.writer._write", outlived_its_lock)
    try:
        concept_write(workspace_id=workspace.pk, token="zorblax")
        assert get_redis().get(key) == "another worker"
    finally:
        get_redis().delete(key)
