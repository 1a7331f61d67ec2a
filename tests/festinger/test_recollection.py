"""Recollections: the seed's Test A (both variants) and Test B's marker, the canonical query's
filters, the injection position, the middleware around real model calls, and the REST endpoints."""

from datetime import timedelta

import pytest
from django.utils import timezone
from redis.exceptions import RedisError

from fathom.llm import Message, complete
from fathom.llm.middleware import LLMRequest, run_before
from fathom.llm.registry import ResolvedModel
from fathom.tracing import span
from fathom.tracing.models import TraceEvent
from festinger import cache
from festinger.cache import changes, model, registry
from festinger.learning import SeenMarks
from festinger.loops.guard import fire_conversation
from festinger.models import Concept, Conflict, Edge
from festinger.recollection import RECOLLECTION_EVENT, held, inject, recollection_for
from festinger.selectors import recollections_list
from festinger.services import insert_fact, world_ensure


def seen(workspace, token, count=50):
    """The concept was seen `count` times already (above the read threshold)."""
    Concept.objects.update_or_create(workspace=workspace, token=token, defaults={"encounter_count": count})
    cache.world_reload(workspace.pk)


# --- Test A ---------------------------------------------------------------------------------------------


def test_a_first_encounter_is_below_the_read_threshold_and_recalls_nothing(world):
    recollection = recollection_for(workspace_id=world.pk, text="Please update gnommoweb to use FastAPI instead")

    assert recollection.block == ""
    loaded = cache.world(world.pk)
    assert loaded.encounters("gnommoweb") == 1 and loaded.saliency("gnommoweb") == 0.0  # log(1)
    assert loaded.encounters("fastapi") == 1
    assert loaded.saliency("please") == 0.0 and loaded.saliency("instead") == 0.0  # common English
    assert not Conflict.objects.filter(workspace=world).exists()


def test_a_salient_concept_without_edges_gets_the_zero_hit_prompt(world):
    seen(world, "gnommoweb", 50)

    recollection = recollection_for(workspace_id=world.pk, text="Please update gnommoweb to use FastAPI instead")

    assert recollection.unknown == ("gnommoweb",)
    assert recollection.block == (
        "<recollection>\n"
        "? gnommoweb: no recollection. If it names something real, teach Fathom what it is before proceeding:\n"
        '  POST /v1/festinger/iknowthat {"fact": "gnommoweb -isa <parent> in context of <dimension>"}\n'
        "  or: python manage.py fathom festinger iknowthat 'gnommoweb -ispart <system> in context of <dimension>'"
        " --workspace <slug>\n"
        "  or, as an MCP client: the iknowthat tool\n"
        "</recollection>")
    assert not Conflict.objects.filter(workspace=world).exists()
    assert cache.world(world.pk).pending_conflicts == set()


def test_an_ordinary_word_missing_from_the_dictionary_gets_no_zero_hit_prompt_nor_a_writer(world):
    # "nightly", "tidepools" and "rebuilding" are regular forms of dictionary words; "gnommoweb" is a name
    for token in ("nightly", "rebuilding", "gnommoweb"):
        seen(world, token, 50)

    recollection = recollection_for(workspace_id=world.pk, text="the nightly build is rebuilding gnommoweb")

    assert recollection.unknown == ("gnommoweb",)
    assert "nightly" not in recollection.block and "rebuilding" not in recollection.block
    assert cache.world(world.pk).to_write([("nightly", 9.0), ("zorbweb", 9.0)]) == ["zorbweb"]


def test_the_second_encounter_reaches_the_read_threshold(world):
    recollection_for(workspace_id=world.pk, text="gnommoweb")
    assert "? gnommoweb" in recollection_for(workspace_id=world.pk, text="gnommoweb").block  # ln 2 > 0.5


# --- hits, Test B's marker, the canonical query's filters -----------------------------------------------


def test_edges_render_as_dimension_and_parent_grouped_by_concept(world):
    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    insert_fact(workspace=world, concept="gnommoweb", parent="Glitch University", dimension="membership",
                is_isa=False, confidence=0.9, source="gutask")
    insert_fact(workspace=world, concept="dobby", parent="python", dimension="tech", is_isa=False,
                confidence=0.9, source="gutask")
    seen(world, "gnommoweb", 10)
    seen(world, "dobby", 5)

    block = recollection_for(workspace_id=world.pk, text="dobby deploys gnommoweb").block

    type_id, membership_id = (Concept.objects.get(workspace=world, token=t).pk for t in ("type", "membership"))
    in_order = ["[membership] glitch_university", "[type] repo"]
    if type_id > membership_id:  # the canonical query orders a concept's edges by dimension id, descending
        in_order.reverse()
    assert block == f"<recollection>\ngnommoweb: {' '.join(in_order)}\ndobby: [tech] python\n</recollection>"


def test_a_pending_conflict_marks_its_dimension_with_a_question_mark(world):
    """Test B: gnommoweb ISA repo held; 'gnommoweb is a container' collides (isa_isa)."""
    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")
    insert_fact(workspace=world, concept="gnommoweb", parent="Glitch University", dimension="membership",
                is_isa=False, confidence=0.9, source="gutask")
    conflict = insert_fact(workspace=world, concept="gnommoweb", parent="container", dimension="type",
                           is_isa=True, confidence=0.8, source="inferred")
    assert isinstance(conflict, Conflict) and conflict.collision_type == "isa_isa"
    seen(world, "gnommoweb", 10)

    loaded = cache.world(world.pk)
    gnommoweb, type_dim = loaded.concept_id("gnommoweb"), loaded.concept_id("type")
    assert loaded.pending_conflicts == {(gnommoweb, type_dim)}
    assert loaded.urd_by_concept_dim[(gnommoweb, type_dim)].parent == "repo"  # the world model stands
    block = recollection_for(workspace_id=world.pk, text="gnommoweb is deployed").block
    assert "[type?] repo" in block and "[membership] glitch_university" in block


def test_edges_below_the_confidence_floor_or_older_than_the_recency_window_are_left_out(world):
    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.5, source="cloud_llm")
    insert_fact(workspace=world, concept="gnommoweb", parent="docker", dimension="runs-on", is_isa=False,
                confidence=0.9, source="cloud_llm")
    insert_fact(workspace=world, concept="gnommoweb", parent="python", dimension="tech", is_isa=False,
                confidence=0.9, source="cloud_llm")
    Edge.objects.filter(workspace=world, parent__token="python").update(
        last_confirmed=timezone.now() - timedelta(days=91))
    seen(world, "gnommoweb", 10)

    block = recollection_for(workspace_id=world.pk, text="gnommoweb").block

    assert block == "<recollection>\ngnommoweb: [runs-on] docker\n</recollection>"


def test_the_configuration_sets_the_thresholds(world):
    from festinger.services import config_update

    config_update(config=world_ensure(workspace=world), saliency_read_threshold=2.0, saliency_write_threshold=3.0)
    cache.world_reload(world.pk)
    seen(world, "gnommoweb", 6)  # ln 7 = 1.95 < 2.0

    assert recollection_for(workspace_id=world.pk, text="gnommoweb").block == ""
    assert "? gnommoweb" in recollection_for(workspace_id=world.pk, text="gnommoweb").block  # ln 8 = 2.08


# --- the injection position -----------------------------------------------------------------------------


def test_the_block_is_prepended_to_the_existing_system_message():
    messages = [Message.user("hi"), Message.system("You help."), Message.user("more")]

    injected = inject(messages, "<recollection>\nx: [type] y\n</recollection>")

    assert [m.role for m in injected] == ["user", "system", "user"]
    assert injected[1].content == "<recollection>\nx: [type] y\n</recollection>\n\nYou help."
    assert messages[1].content == "You help."  # the caller's list is not changed


def test_without_a_system_message_the_block_is_a_new_system_message_at_position_0():
    injected = inject([Message.user("hi")], "<recollection>\nx: [type] y\n</recollection>")

    assert [(m.role, m.content) for m in injected] == [
        ("system", "<recollection>\nx: [type] y\n</recollection>"), ("user", "hi")]
    assert inject([Message.user("hi")], "") == [Message.user("hi")]


# --- the model middleware -------------------------------------------------------------------------------


def test_every_model_call_is_enriched_and_counts_only_what_it_adds(world, scripted_llm):
    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    seen(world, "gnommoweb", 10)
    scripted_llm.reply("It is a repo.").reply("Done.")

    answer = complete(workspace=world, role="main", messages=[Message.user("What is gnommoweb?")])
    complete(workspace=world, role="main", messages=[
        Message.system("You help."), Message.user("What is gnommoweb?"), Message.assistant(answer.text),
        Message.user("Deploy it")])

    first, second = scripted_llm.sent
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.messages[0].content == "<recollection>\ngnommoweb: [type] repo\n</recollection>"
    assert second.messages[0].content == "<recollection>\ngnommoweb: [type] repo\n</recollection>\n\nYou help."
    # The first call counted its prompt; the second only 'Deploy it' (the rest was already counted).
    assert cache.world(world.pk).encounters("gnommoweb") == 11


def test_held_seen_marks_render_their_messages_as_counted_and_count_them_once_read(world):
    recollection_for(workspace_id=world.pk, text="gnommoweb is slow")  # the first encounter

    def call():
        request = LLMRequest(workspace_id=world.pk, role="proxy", model=ResolvedModel("m", "ollama", "m"),
                             messages=[Message.user("and gnommoweb again")], options={"conversation": "held"})
        answered = []
        with held([], answered):
            run_before(request)
        return request, answered

    request, answered = call()
    assert "gnommoweb" in request.messages[0].content  # the second encounter, salient in this prompt
    assert cache.world(world.pk).encounters("gnommoweb") == 1  # not counted before the marks' answer is read
    assert request.metadata["festinger"]["counted"] == 0

    answered[0]()
    assert cache.world(world.pk).encounters("gnommoweb") == 2
    assert request.metadata["festinger"]["counted"] == 1

    resent, answered = call()  # the same message again: known here, nothing marked nor counted twice
    assert answered == [] and resent.metadata["festinger"]["counted"] == 0
    assert cache.world(world.pk).encounters("gnommoweb") == 2


def held_call(world, messages, conversation):
    request = LLMRequest(workspace_id=world.pk, role="proxy", model=ResolvedModel("m", "ollama", "m"),
                         messages=messages, options={"conversation": conversation})
    answered = []
    with held([], answered):
        run_before(request)
    return request, answered


def test_held_seen_marks_render_only_the_new_turn_as_counted(world):
    # A conversation this process never saw (a restart): its history was sent, and counted, before.
    request, answered = held_call(world, [Message.user("zorbix is down"), Message.assistant("checking"),
                                          Message.user("and zorbix again?")], "restarted")
    assert request.metadata["festinger"]["unknown"] == []  # one encounter rendered, not two: not salient

    answered[0]()  # Redis: all three are new to the conversation, and are counted
    assert cache.world(world.pk).encounters("zorbix") == 2


def test_held_seen_marks_that_fail_when_read_learn_nothing_from_the_call(world, monkeypatch):
    request, answered = held_call(world, [Message.user("zorbix is down")], "failing")

    def unreachable(marks):
        raise RedisError("Redis went away")

    monkeypatch.setattr(SeenMarks, "unseen", unreachable)
    answered[0]()
    assert cache.world(world.pk).encounters("zorbix") == 0
    assert request.metadata["festinger"]["conversation"] is None  # nor is the reply counted after


def test_the_trace_keeps_what_each_prompt_received(world, scripted_llm):
    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    seen(world, "gnommoweb", 10)
    scripted_llm.reply("It is a repo.").reply("Hello.")

    with span("trace.prompt", workspace=world, run_id="run-1"):
        complete(workspace=world, role="main", call_id="llm-first", messages=[
            Message.system("You help."), Message.user("What is gnommoweb?")])
        complete(workspace=world, role="main", messages=[Message.user("hello")])  # nothing to recall

    event = TraceEvent.objects.get(workspace=world, kind=RECOLLECTION_EVENT)
    assert (event.name, event.call_id, event.run_id) == ("llm.call", "llm-first", "run-1")  # the call's span
    assert event.payload == {"block": "<recollection>\ngnommoweb: [type] repo\n</recollection>",
                             "recalled": ["gnommoweb"], "unknown": [],
                             "session": fire_conversation(trace_id=event.trace_id, system="You help.",
                                                         first_user="What is gnommoweb?").name}
    assert [row.payload["block"] for row in recollections_list(workspace=world, session=event.payload["session"])] \
        == [event.payload["block"]]


def test_the_writer_and_resolver_calls_are_left_alone(world, scripted_llm):
    seen(world, "gnommoweb", 10)
    scripted_llm.reply("{}").reply("{}")

    complete(workspace=world, role="writer", messages=[Message.user("What is gnommoweb?")])
    complete(workspace=world, role="resolver", messages=[Message.user("gnommoweb conflicts")])

    assert all(len(sent.messages) == 1 for sent in scripted_llm.sent)
    assert cache.world(world.pk).encounters("gnommoweb") == 10


def test_a_workspace_without_a_world_is_not_enriched_nor_counted(workspace, scripted_llm):
    scripted_llm.reply("a").reply("b")

    for _ in range(2):
        complete(workspace=workspace, role="main", messages=[Message.user("gnommoweb gnommoweb gnommoweb")])

    assert [len(sent.messages) for sent in scripted_llm.sent] == [1, 1]
    assert cache.world(workspace.pk) is None
    assert not Concept.objects.filter(workspace=workspace).exists()


# --- REST ------------------------------------------------------------------------------------------------


def test_get_recollection_shows_what_would_be_injected_without_counting(world, api_client_for):
    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    seen(world, "gnommoweb", 10)
    viewer = api_client_for(world, "viewer")

    response = viewer.get("/v1/festinger/recollection", {"text": "Update gnommoweb and zorblax"})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["active"] is True
    assert body["block"] == "<recollection>\ngnommoweb: [type] repo\n</recollection>"
    assert body["recalled"] == ["gnommoweb"] and body["unknown"] == []
    assert body["salient"] == [{"token": "gnommoweb", "saliency": pytest.approx(2.3026, abs=1e-3)}]
    assert cache.world(world.pk).encounters("gnommoweb") == 10  # a preview counts nothing


def test_get_recollection_without_text_is_a_400_that_says_so(world, api):
    response = api.get("/v1/festinger/recollection")

    assert response.status_code == 400
    assert "text" in response.content.decode()


def test_reload_is_for_operators_and_reloads_from_the_database(world, api_client_for):
    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    cache.world(world.pk)
    Edge.objects.filter(workspace=world, concept__token="gnommoweb").update(confidence=0.1)  # behind the cache's back

    assert api_client_for(world, "viewer").post("/v1/festinger/reload").status_code == 403
    response = api_client_for(world, "operator").post("/v1/festinger/reload")

    assert response.status_code == 200, response.content
    assert response.json()["active"] is True and response.json()["edges"] == 1
    assert cache.world(world.pk).edges("gnommoweb")[0].confidence == 0.1


def test_a_workspace_never_recalls_another_workspaces_facts(world, other_workspace, api_client_for):
    world_ensure(workspace=other_workspace)
    insert_fact(workspace=world, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    seen(world, "gnommoweb", 10)
    Concept.objects.update_or_create(workspace=other_workspace, token="gnommoweb",
                                     defaults={"encounter_count": 10})
    intruder = api_client_for(other_workspace, "owner")

    body = intruder.get("/v1/festinger/recollection", {"text": "gnommoweb"}).json()
    reloaded = intruder.post("/v1/festinger/reload").json()

    assert "repo" not in body["block"] and body["unknown"] == ["gnommoweb"]
    assert reloaded["edges"] == 0
    cache.forget(other_workspace.pk)


def test_the_reply_is_counted_and_its_cues_are_queued(world, scripted_llm, django_capture_on_commit_callbacks):
    scripted_llm.reply("Yes: zorblax is a message broker.")

    with django_capture_on_commit_callbacks() as queued:
        complete(workspace=world, role="main", messages=[Message.user("What is zorblax?")])

    assert cache.world(world.pk).encounters("zorblax") == 2  # once in the prompt, once in the reply
    assert len(queued) == 1  # the cue insert, sent to the memory queue once the caller commits


def test_without_redis_a_model_call_goes_on_without_its_recollection(world, scripted_llm, monkeypatch, tmp_path):
    import redis

    seen(world, "gnommoweb", 10)
    cache.forget(world.pk)
    unreachable = redis.Redis(unix_socket_path=str(tmp_path / "gone.sock"), socket_connect_timeout=0.2)
    for part in (registry, changes, model):  # every part of the cache that talks to Redis
        monkeypatch.setattr(part, "get_redis", lambda: unreachable)
    scripted_llm.reply("fine")

    answer = complete(workspace=world, role="main", messages=[Message.user("gnommoweb?")])

    assert answer.text == "fine" and len(scripted_llm.sent[0].messages) == 1
