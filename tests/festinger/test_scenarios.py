"""The seed's integration scenarios T34-T36, with the scripted model and a real Celery worker: model
calls go through fathom.llm (the Ollama proxy is a later issue), facts and writes through the memory
queue, and the next call's recollection shows what was learned."""

import json
import time

import pytest

from fathom.llm import Message, complete
from fathom.llm.scripted import Script
from festinger import cache
from festinger.models import Concept, Conflict, Edge
from festinger.services import insert_fact, world_ensure

pytestmark = [pytest.mark.worker, pytest.mark.slow]


@pytest.fixture
def world(transactional_db, workspace, celery_worker):
    world_ensure(workspace=workspace)
    main, writer = Script.install(workspace, roles=("main",)), Script.install(workspace, roles=("writer",))
    yield workspace, main, writer
    cache.forget(workspace.pk)
    main.reset()
    writer.reset()


def ask(workspace, text, system="You are a helpful agent."):
    return complete(workspace=workspace, role="main", messages=[Message.system(system), Message.user(text)])


def wait_for(check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("the worker did not get there in time")


def test_t34_a_plain_prompt_is_tokenised_counted_and_recalled_around_a_model_call(world):
    workspace, main, _writer = world

    insert_fact(workspace=workspace, concept="Glitch University", parent="university", dimension="type",
                is_isa=True, confidence=0.9, source="gutask")
    main.reply("Deploying.").reply("Deployed again.")

    first = ask(workspace, "Update the site of Glitch University today")
    second = ask(workspace, "Update the site of Glitch University again")

    assert (first.text, second.text) == ("Deploying.", "Deployed again.")  # the round trip
    assert main.sent[0].messages[0].content == "You are a helpful agent."  # one encounter: below the threshold
    assert main.sent[1].messages[0].content == (
        "<recollection>\nglitch_university: [type] university\n</recollection>\n\nYou are a helpful agent.")
    loaded = cache.world(workspace.pk)
    assert loaded.encounters("glitch_university") == 2 and loaded.saliency("glitch_university") > 0.5

    cache.push_all()  # what process exit does
    from fathom.celery import app

    app.send_task("maintenance.festinger_counts_flush")
    wait_for(lambda: Concept.objects.get(workspace=workspace, token="glitch_university").encounter_count == 2)


def test_t35_a_cue_in_a_prompt_becomes_a_fact_recalled_by_the_next_prompt(world):
    workspace, main, _writer = world
    main.reply("Noted.").reply("Sure.")

    ask(workspace, "For the record: gnommoweb is a repo of Glitch University")
    edge = wait_for(lambda: Edge.objects.filter(workspace=workspace, concept__token="gnommoweb").first())
    ask(workspace, "Now update gnommoweb")

    assert (edge.parent.token, edge.dimension.token, edge.is_isa, edge.source) == (
        "repo", "glitch_university", True, "inferred")
    assert main.sent[1].messages[0].content.startswith(
        "<recollection>\ngnommoweb: [glitch_university] repo\n</recollection>")


def test_t36_the_write_threshold_asks_the_writer_and_the_next_prompt_recalls_its_answer(world):
    workspace, main, writer = world
    main.reply("Restarting.").reply("Done.")
    writer.reply(json.dumps({"triples": [
        {"concept": "zorblax", "parent": "message broker", "dimension": "type", "is_isa": True, "confidence": 0.9},
        {"concept": "zorblax", "parent": "Erlang", "dimension": "tech", "is_isa": False, "confidence": 0.8},
        {"concept": "zorblax", "parent": "somewhere", "dimension": "colour", "is_isa": False, "confidence": 0.8},
    ]}))

    # Four encounters in one prompt: ln 4 = 1.39 crosses the write threshold (1.2).
    ask(workspace, "zorblax is slow; zorblax logs; zorblax again; restart zorblax")
    wait_for(lambda: Concept.objects.filter(workspace=workspace, token="zorblax", novelty=1.0).exists())
    ask(workspace, "and zorblax now?")

    request = writer.sent[0]
    assert "What is `zorblax`?" in request.messages[-1].content
    dimensions = request.response_format["json_schema"]["schema"]["properties"]["triples"]["items"][
        "properties"]["dimension"]["enum"]
    assert set(dimensions) == {"type", "membership", "runs-on", "tech", "owned-by", "geography"}
    assert len(writer.sent) == 1  # one model call for this write
    edges = {(e.parent.token, e.dimension.token, e.source)
             for e in Edge.objects.filter(workspace=workspace, concept__token="zorblax").select_related(
                 "parent", "dimension")}
    assert edges == {("message_broker", "type", "cloud_llm"), ("erlang", "tech", "cloud_llm")}  # 'colour' refused
    recalled = main.sent[1].messages[0].content
    assert recalled.startswith("<recollection>\nzorblax: ") and "[type] message_broker" in recalled
    assert "[tech] erlang" in recalled


def wait_for_run(workspace, run_id):
    from festinger.models import ResolutionRun

    return wait_for(lambda: ResolutionRun.objects.filter(pk=run_id).exclude(status__in=["queued", "running"]).first(),
                    timeout=60)


def test_t37_an_isa_isa_collision_is_marked_until_the_job_decomposes_it(world, api_client_for):
    workspace, main, _writer = world
    resolver = Script.install(workspace, roles=("resolver",))
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")
    main.reply("Noted.").reply("Restarting.").reply("Done.")

    ask(workspace, "gnommoweb is a container")  # the cue collides with 'gnommoweb ISA repo'
    conflict = wait_for(lambda: Conflict.objects.filter(workspace=workspace, concept__token="gnommoweb").first())
    ask(workspace, "restart gnommoweb")

    assert (conflict.collision_type, conflict.status, conflict.incoming_parent.token) == (
        "isa_isa", "pending", "container")
    assert main.sent[1].messages[0].content.startswith("<recollection>\ngnommoweb: [type?] repo\n</recollection>")

    resolver.reply(json.dumps({"decision": "decompose", "existing_dimension": "artifact-type",
                               "new_dimension": "deployment-type", "reasoning": "what it is vs how it runs"}))
    run = api_client_for(workspace, "operator").post("/v1/festinger/resolve/run", {}, format="json").json()
    assert wait_for_run(workspace, run["id"]).resolved == 1
    ask(workspace, "is gnommoweb up?")

    recalled = main.sent[2].messages[0].content.split("\n</recollection>")[0]
    assert recalled == "<recollection>\ngnommoweb: [deployment-type] container [artifact-type] repo"
    resolver.reset()


def test_t38_an_ispart_ispart_collision_dismissed_leaves_the_world_unchanged_and_the_marker_gone(
        world, api_client_for):
    workspace, main, _writer = world
    resolver = Script.install(workspace, roles=("resolver",))
    insert_fact(workspace=workspace, concept="dobby", parent="agent_pool", dimension="membership",
                is_isa=False, confidence=0.9, source="cloud_llm")
    main.reply("Noted.").reply("Ok.").reply("Ok.")

    ask(workspace, "dobby is part of worker_pool")
    conflict = wait_for(lambda: Conflict.objects.filter(workspace=workspace, concept__token="dobby").first())
    ask(workspace, "check dobby")

    assert conflict.collision_type == "ispart_ispart"
    assert main.sent[1].messages[0].content.startswith(
        "<recollection>\ndobby: [membership?] agent_pool\n</recollection>")

    resolver.reply(json.dumps({"decision": "dismiss", "reasoning": "agent_pool is current"}))
    run = api_client_for(workspace, "operator").post("/v1/festinger/resolve/run", {}, format="json").json()
    assert wait_for_run(workspace, run["id"]).dismissed == 1
    ask(workspace, "check dobby again")

    assert main.sent[2].messages[0].content.startswith("<recollection>\ndobby: [membership] agent_pool\n</recollection>")
    assert list(Edge.objects.filter(workspace=workspace, concept__token="dobby")
                .values_list("parent__token", "dimension__token")) == [("agent_pool", "membership")]
    resolver.reset()
