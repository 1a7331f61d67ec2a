"""Seed 002's Tests A, B and C end to end through the proxy (T34): an Ollama client talks to the
proxy, the proxy to a fake Ollama; cues go through the memory queue to a real Celery worker, and the
resolution job decides with a scripted resolver. What the fake Ollama receives is what Ollama would."""

import json

import ollama
import pytest

from fathom.llm.scripted import Script
from festinger import cache
from festinger.models import Conflict, Edge, ResolutionRun
from festinger.proxy.serve import own_port_app
from festinger.services import insert_fact, world_ensure
from tests.conftest import wait_for
from tests.festinger.proxy_support import FakeOllama, serving

pytestmark = [pytest.mark.worker, pytest.mark.slow]
SYSTEM = "You are Agent Zero."


@pytest.fixture
def agent(transactional_db, workspace, settings, celery_worker):
    fake = FakeOllama().always_chat("Ok.")
    settings.OLLAMA_HOST = fake.url
    world_ensure(workspace=workspace)
    with serving(own_port_app(workspace_slug=workspace.slug, token="")) as url:
        client = ollama.Client(host=url)

        def ask(text: str) -> str:
            """The system prompt as forwarded to Ollama for this prompt."""
            client.chat(model="llama3.2", messages=[{"role": "system", "content": SYSTEM},
                                                    {"role": "user", "content": text}])
            return fake.chat_bodies()[-1]["messages"][0]["content"]

        yield ask
    cache.forget(workspace.pk)
    fake.close()


def test_a_an_unknown_concept_is_not_recalled_until_salient_then_gets_the_zero_hit_prompt(agent, workspace):
    assert agent("Please update gnommoweb to use FastAPI instead") == SYSTEM  # first encounter: below the threshold
    world = cache.world(workspace.pk)
    for _ in range(50):
        world.count("gnommoweb")
    forwarded = agent("Please update gnommoweb to use FastAPI instead")
    assert forwarded.startswith("<recollection>\n? gnommoweb: no recollection. If it names something real, teach "
                                'Fathom what it is before proceeding:\n  POST /v1/festinger/iknowthat {"fact": '
                                '"gnommoweb -isa <parent> in context of <dimension>"}')
    assert forwarded.count("<recollection>") == 1 and forwarded.endswith(SYSTEM)
    assert not Conflict.objects.filter(workspace=workspace).exists()


def test_b_and_c_a_colliding_cue_is_marked_until_the_job_decomposes_it(agent, workspace, api_client_for):
    resolver = Script.install(workspace, roles=("resolver",))
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")

    agent("gnommoweb is a container deployed on Docker")  # Test B: the cue collides with 'gnommoweb ISA repo'
    conflict = wait_for(lambda: Conflict.objects.filter(workspace=workspace, concept__token="gnommoweb").first())
    assert (conflict.collision_type, conflict.status, conflict.existing_parent.token,
            conflict.incoming_parent.token) == ("isa_isa", "pending", "repo", "container")
    assert list(Edge.objects.filter(workspace=workspace, concept__token="gnommoweb", dimension__token="type")
                .values_list("parent__token", flat=True)) == ["repo"]  # the world's type unchanged
    wait_for(lambda: cache.world(workspace.pk).pending_conflicts)  # the change has reached this process
    recalled = agent("restart gnommoweb").split("\n")  # ("deployed on Docker" is a runs-on fact of its own)
    assert recalled[0] == "<recollection>" and recalled[1].startswith("gnommoweb: ")
    assert "[type?] repo" in recalled[1] and "container" not in recalled[1]

    # Test C: the resolution job decomposes the dimension
    resolver.reply(json.dumps({"decision": "decompose", "existing_dimension": "artifact-type",
                               "new_dimension": "deployment-type", "reasoning": "what it is vs how it runs"}))
    run = api_client_for(workspace, "operator").post("/v1/festinger/resolve/run", {}, format="json").json()
    finished = wait_for(lambda: ResolutionRun.objects.filter(pk=run["id"]).exclude(
        status__in=["queued", "running"]).first(), timeout=60)
    assert finished.resolved == 1
    wait_for(lambda: not cache.world(workspace.pk).pending_conflicts)
    recalled = agent("is gnommoweb up?").split("\n")
    assert recalled[0] == "<recollection>" and recalled[1].startswith("gnommoweb: ")
    assert "[deployment-type] container [artifact-type] repo" in recalled[1] and "?" not in recalled[1]
    conflict.refresh_from_db()
    assert conflict.status == "resolved" and conflict.resolution["decision"]["decision"] == "decompose"
    resolver.reset()
