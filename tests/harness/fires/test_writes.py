"""The lake tools through a fire, the per-fire writes (each exactly once), the review pass's
proposal, and the offline model answering from the lake."""

from harness.fires.models import Fire, FireToolCall
from harness.fires.services import fire_create, fire_run
from harness.fires.tasks import fire_judge_axes as fire_judge_axes_task
from harness.fires.writes import fire_writes
from harness.runtime.models import Trigger
from harness.runtime.services import message_send, trigger_enqueue
from lake.models import Delta
from lake.services import delta_create, deltas_embed, provenance_create
from proposals.models import Proposal
from tests.harness.support import session_tick


def respond(**arguments):
    return {"name": "respond", "arguments": arguments}


def test_semantic_expand_and_ascend_read_the_lake_through_a_fire(scripted_llm, workspace):
    rover = delta_create(workspace=workspace, content="the rover crossed the dune at dawn", source="log")
    episode = provenance_create(workspace=workspace, title="rover spike", child_ids=[rover.pk])
    fire = fire_create(workspace=workspace, mode="introspective", question="rover?")
    scripted_llm.reply(tool_calls=[
        {"id": "s", "name": "semantic", "arguments": {"query": "rover dune"}},
        {"id": "e", "name": "expand", "arguments": {"delta_id": episode.pk}},
        {"id": "a", "name": "ascend", "arguments": {"delta_id": rover.pk}},
        {"id": "x", "name": "expand", "arguments": {"delta_id": "ffffffffffff"}},
    ])
    scripted_llm.reply(tool_calls=[respond(body="it crossed", cited_ids=[rover.pk])]).call_tool("skip")
    fire_run(fire_id=fire.pk)
    results = dict(FireToolCall.objects.filter(fire=fire).values_list("call_id", "result"))
    assert f"[{rover.pk}]" in results["s"]
    assert f"[{rover.pk}]" in results["e"] and "crossed the dune" in results["e"]
    assert f"[{episode.pk}]" in results["a"] and "rover spike" in results["a"]
    assert results["x"].startswith("error: no delta")


def test_semantic_tells_the_model_why_it_found_nothing(scripted_llm, workspace):
    rover = delta_create(workspace=workspace, content="the rover crossed the dune at dawn", source="log")
    deltas_embed(delta_ids=[rover.pk])  # its nearest neighbour is below the floor, not absent
    fire = fire_create(workspace=workspace, mode="introspective", question="anything?")
    scripted_llm.reply(tool_calls=[
        {"id": "small", "name": "semantic", "arguments": {"query": "what is it and where"}},
        {"id": "far", "name": "semantic", "arguments": {"query": "zqxv blorf wug"}},
    ])
    scripted_llm.reply(tool_calls=[respond(body="nothing on that")]).call_tool("skip")
    fire_run(fire_id=fire.pk)
    results = dict(FireToolCall.objects.filter(fire=fire).values_list("call_id", "result"))
    assert "only small words" in results["small"]
    assert "below the relevance floor" in results["far"]


def test_a_fire_writes_its_card_attestation_mood_engagement_and_qa_marker_once(scripted_llm, session, other_workspace):
    # given a lake with two moments the fire reads, one it never sees, another workspace's moment, and
    # a fire answering a message that cites the first, drops the second, and names the others too
    kept = delta_create(workspace=session.workspace, content="Io is a cat")
    wrong = delta_create(workspace=session.workspace, content="Io is a moon")
    unseen = delta_create(workspace=session.workspace, content="Io sleeps all day")
    foreign = delta_create(workspace=other_workspace, content="Io is a nymph")
    message = message_send(session=session, content="who is Io?")
    scripted_llm.reply(tool_calls=[{"id": "k", "name": "view_full", "arguments": {"delta_id": kept.pk}},
                                   {"id": "w", "name": "view_full", "arguments": {"delta_id": wrong.pk}}])
    scripted_llm.reply(tool_calls=[respond(
        body="Io is your cat.", attestation="I keep pets apart from moons.",
        mood_shift={"direction": "+", "axis": "warmth", "magnitude": 0.1, "reason": "a cat"},
        cards=[{"kind": "insight", "body": "Io is a cat, not a moon.", "citations": [
            {"id": kept.pk, "quote": "Io is a cat"}, {"id": unseen.pk}, {"id": foreign.pk}, {"id": "0" * 16}]}],
        cited_ids=[kept.pk, "000000000000", unseen.pk, foreign.pk], dropped_ids=[wrong.pk])])
    scripted_llm.call_tool("skip")
    # when the session ticks
    session_tick(session_id=session.pk)
    fire = Fire.objects.get(session=session)
    tag = f"fire:{fire.pk}"
    written = Delta.objects.filter(workspace=session.workspace, tags__contains=[tag])
    kinds = sorted(t for d in written for t in d.tags if t.startswith("kind:"))
    # then each write is there once (the made-up, unseen and foreign ids get no attest)
    assert kinds == ["kind:card", "kind:engagement-attest", "kind:engagement-attest", "kind:insight",
                     "kind:mood-shift", "kind:provenance", "kind:qa-marker", "kind:standpoint-attestation"]
    # and no tag names an id the fire did not see: the insight cites what it read, nothing else
    insight = written.get(tags__contains=["kind:insight"])
    assert [t for t in insight.tags if t.startswith("cites:")] == [f"cites:{kept.pk}"]
    named = {t.split(":", 1)[1] for d in written for t in d.tags if t.startswith(("cites:", "affirms:", "refutes:",
                                                                                   "from:"))}
    assert named == {kept.pk, wrong.pk}
    card = written.get(tags__contains=["kind:card"])
    assert card.content == "Io is your cat." and f"addressed:{message.pk}" in card.tags and session.tag in card.tags
    assert written.filter(tags__contains=[f"affirms:{kept.pk}"]).count() == 1
    assert written.filter(tags__contains=[f"refutes:{wrong.pk}"]).count() == 1
    marker = written.get(tags__contains=["kind:qa-marker"])
    assert "provenance-level:0" in marker.tags and f"from:{kept.pk}" in marker.tags
    assert fire.writes["card"] == card.pk and fire.writes["qa_marker"] == marker.pk

    # and a replay of the writes phase (a redelivered fire) writes nothing more
    before = Delta.objects.filter(workspace=session.workspace).count()
    fire.phase = Fire.Phase.WRITES
    fire_writes(fire)
    assert Delta.objects.filter(workspace=session.workspace).count() == before


def test_the_review_pass_proposes_provenance_through_the_proposals_gate(scripted_llm, workspace):
    a = delta_create(workspace=workspace, content="day one of the spike")
    b = delta_create(workspace=workspace, content="day two of the spike")
    fire = fire_create(workspace=workspace, mode="introspective", question="the spike?")
    scripted_llm.reply(tool_calls=[respond(body="two days", cited_ids=[a.pk, b.pk])])
    scripted_llm.call_tool("propose_provenance", {"level": 1, "title": "the spike", "from_ids": [a.pk, b.pk],
                                                  "summary": "two days of work"})
    fire = fire_run(fire_id=fire.pk)
    proposal = Proposal.objects.get(workspace=workspace)
    assert fire.review["outcome"] == "proposed"
    assert proposal.tool == "provenance" and proposal.level == 1 and proposal.status == "approved"
    assert proposal.producer == f"harness:fire:{fire.pk}"
    # the review pass offered only its two outcomes
    assert sorted(t["name"] for t in scripted_llm.sent[1].tools) == ["propose_provenance", "skip"]


def test_offline_the_fire_searches_the_lake_and_cites_what_it_found(session):
    found = delta_create(workspace=session.workspace, content="the lighthouse keeper logs the storms")
    message_send(session=session, content="lighthouse storms")
    session_tick(session_id=session.pk)
    fire = Fire.objects.get(session=session)
    assert fire.status == "finished"
    assert [c.name for c in fire.tool_calls.order_by("created_at")][:1] == ["semantic"]
    assert fire.response["cited_ids"] == [found.pk] and fire.response["body"].startswith("[offline]")
    assert f"[{found.pk}]" in fire.response["body"] and "the lighthouse keeper logs the storms" in fire.response["body"]
    assert Delta.objects.filter(tags__contains=["kind:card", f"fire:{fire.pk}"]).exists()



def test_a_machine_trigger_is_no_question_for_the_qa_marker(scripted_llm, session):
    note = delta_create(workspace=session.workspace, content="the tide turns at noon")
    for triggers in ([(Trigger.Kind.HEARTBEAT, "every 60s")],
                     [(Trigger.Kind.HEARTBEAT, "every 60s"), (Trigger.Kind.USER_MESSAGE, "when does the tide turn?")]):
        scripted_llm.reply(tool_calls=[{"id": "v", "name": "view_full", "arguments": {"delta_id": note.pk}}])
        scripted_llm.reply(tool_calls=[respond(body="At noon.", cited_ids=[note.pk])]).call_tool("skip")
        for kind, content in triggers:
            trigger_enqueue(session=session, kind=kind, content=content)
        session_tick(session_id=session.pk)
    # a heartbeat alone leaves no Q/A marker; with a message, the marker's question is the message's
    [marker] = Delta.objects.filter(workspace=session.workspace, tags__contains=["kind:qa-marker"])
    assert marker.title == "when does the tide turn?" and "Heartbeat" not in marker.content


def test_the_judge_axes_task_names_its_delta_in_the_fires_writes(api, scripted_llm, workspace):
    # given a fire that answered: its writes say the judgement is queued
    fire = fire_create(workspace=workspace, mode="introspective", question="how far did the rover go?")
    scripted_llm.reply(tool_calls=[respond(body="It went four kilometres over the dune.")]).call_tool("skip")
    fire_run(fire_id=fire.pk)
    assert api.get(f"/v1/fires/{fire.pk}").json()["writes"]["judge_axes"] == "queued"

    # when the judge's task runs (twice: a redelivery)
    scripted_llm.reply('{"salience": 0.5, "novelty": 0.25, "resonance": 0.5, "confidence": 0.75, "comfort": 0.5}')
    first = fire_judge_axes_task.apply(args=[str(fire.pk)]).get()
    again = fire_judge_axes_task.apply(args=[str(fire.pk)]).get()

    # then the fire's writes name the one judge-axes delta
    judged = Delta.objects.get(workspace=workspace, tags__contains=["kind:judge-axes", f"fire:{fire.pk}"])
    assert first == again == judged.pk and "confidence:0.75" in judged.tags
    assert api.get(f"/v1/fires/{fire.pk}").json()["writes"]["judge_axes"] == judged.pk

