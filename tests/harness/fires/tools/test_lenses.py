"""The lenses (state, pattern, time, relate) through a fire: the model calls them with the scripted
provider and reads real queries over the lake (and the session) in the tool results."""

from datetime import timedelta

import pytest
from django.utils import timezone

from harness.runtime import claims
from harness.runtime.models import Session
from harness.runtime.services import message_send
from lake.services import delta_create, deltas_create, provenance_create
from proposals.services import proposal_draft
from tests.harness.support import session_tick
from tests.harness.tool_fire import received, run_tools

NOW = timezone.now().replace(microsecond=0)


def at(**ago) -> timezone.datetime:
    return NOW - timedelta(**ago)


@pytest.mark.parametrize("lens,actions", [
    ("state", ["pending_intents", "proposals", "mood", "crystal", "recent"]),
    ("pattern", ["tagged", "count_by", "salient_recent", "dormant"]),
    ("time", ["between", "bucket_by", "around"]),
    ("relate", ["with_contact", "engagement", "dropped_around", "cited_by", "link"]),
])
def test_each_lens_lists_its_actions_on_help(scripted_llm, workspace, lens, actions):
    fire, results = run_tools(scripted_llm, workspace, [("h", lens, {"action": "help"})])
    listed = [line.split("(")[0].removeprefix("- ") for line in results["h"].splitlines() if line.startswith("- ")]
    assert listed == actions
    # the schema the model was offered names the same actions
    spec = next(t for t in scripted_llm.sent[0].tools if t["name"] == lens)
    assert spec["parameters"]["properties"]["action"]["enum"] == ["help", *actions]


def test_an_unknown_action_or_a_missing_argument_comes_back_as_an_error(scripted_llm, workspace):
    _, results = run_tools(scripted_llm, workspace, [
        ("bad", "time", {"action": "tomorrow"}),
        ("missing", "relate", {"action": "link", "delta_id": "abcdef0123456789"}),
        ("when", "time", {"action": "between", "since": "last tuesday"}),
        ("extra", "pattern", {"action": "count_by", "contact": "ann"}),
        ("ignored", "time", {"action": "between", "since": "1d", "unit": "day"}),
    ])
    assert results["bad"].startswith("error: malformed arguments for time at action")
    assert results["missing"] == 'error: relate(action=\'link\') needs other_id; see relate(action="help")'
    assert results["when"].startswith("error: since: 'last tuesday' is not a date/time")
    assert results["extra"].startswith("error: malformed arguments for pattern")
    assert results["ignored"].endswith("\n(note: between ignores unit)")


def test_time_between_bucket_by_and_around(scripted_llm, workspace):
    # `a` and `b` half an hour apart on one day, whatever the time of day now (noon, two days ago)
    moved = at(days=2).replace(hour=12, minute=0, second=0, microsecond=0)
    old = delta_create(workspace=workspace, content="old note", created_at=at(days=10))
    a = delta_create(workspace=workspace, content="dawn at the dune", created_at=moved - timedelta(minutes=30))
    b = delta_create(workspace=workspace, content="rover moved", created_at=moved)
    c = delta_create(workspace=workspace, content="lunch", created_at=at(days=1), tags=["kind:meal"])
    _, results = run_tools(scripted_llm, workspace, [
        ("between", "time", {"action": "between", "since": "3d", "until": "36h"}),
        ("buckets", "time", {"action": "bucket_by", "unit": "day", "days": 14}),
        ("around", "time", {"action": "around", "delta_id": b.pk, "minutes": 45}),
        ("at", "time", {"action": "around", "at": at(days=1).isoformat(), "minutes": 5}),
        ("kinds", "time", {"action": "between", "since": "30d", "kind": "meal"}),
    ])
    between = results["between"]
    assert f"[{a.pk}]" in between and f"[{b.pk}]" in between and f"[{c.pk}]" not in between
    assert between.index(a.pk) < between.index(b.pk)  # oldest first
    assert f"[{old.pk}]" not in between
    buckets = results["buckets"]
    assert "4 in all" in buckets and "3 non-empty days" in buckets
    assert f"- {moved.strftime('%Y-%m-%d')}: 2" in buckets
    around = results["around"]
    assert f"▸ [{b.pk}]" in around and f"- [{a.pk}]" in around and c.pk not in around
    assert f"[{c.pk}]" in results["at"] and b.pk not in results["at"]
    assert f"[{c.pk}]" in results["kinds"] and a.pk not in results["kinds"]


def test_pattern_tagged_count_by_salient_recent_and_dormant(scripted_llm, workspace):
    gone = delta_create(workspace=workspace, content="a dream", tags=["kind:dream", "topic:sleep"],
                        created_at=at(days=40))
    notes = [delta_create(workspace=workspace, content=f"note {n}", tags=["kind:note", "topic:rover"],
                          created_at=at(days=n)) for n in (1, 2, 3)]
    cited = notes[0]
    deltas_create(workspace=workspace, items=[
        {"content": f"affirms {cited.pk}", "tags": ["kind:engagement-attest", f"affirms:{cited.pk}", "fire:f1"]},
        {"content": f"affirms {cited.pk}", "tags": ["kind:engagement-attest", f"affirms:{cited.pk}", "fire:f2"]},
        {"content": f"refutes {notes[1].pk}", "tags": ["kind:engagement-attest", f"refutes:{notes[1].pk}", "fire:f2"]},
    ])
    episode = provenance_create(workspace=workspace, title="rover week", child_ids=[notes[2].pk])
    _, results = run_tools(scripted_llm, workspace, [
        ("tagged", "pattern", {"action": "tagged", "tags": ["topic:rover"], "limit": 2}),
        ("kinds", "pattern", {"action": "count_by", "by": "kind", "days": 30}),
        ("topics", "pattern", {"action": "count_by", "by": "topic"}),
        ("salient", "pattern", {"action": "salient_recent", "days": 7}),
        ("dormant", "pattern", {"action": "dormant", "by": "topic", "days": 14}),
        ("needs", "pattern", {"action": "tagged"}),
    ])
    assert "(2 of 3 (raise limit for more))" in results["tagged"]
    assert results["tagged"].index(notes[0].pk) < results["tagged"].index(notes[1].pk)  # newest first
    assert "- note: 3" in results["kinds"] and "- engagement-attest: 3" in results["kinds"]
    assert "dream" not in results["kinds"]  # outside the 30 days
    assert "- rover: 3" in results["topics"] and "- sleep: 1" in results["topics"]
    salient = results["salient"].splitlines()
    assert f"score +2 (cited 2) [{cited.pk}]" in salient[1]
    assert any(f"score +1 (contained 1) [{notes[2].pk}]" in line for line in salient)
    assert any(f"score -1 (dropped 1) [{notes[1].pk}]" in line for line in salient)
    assert episode.pk not in results["salient"] and gone.pk not in results["salient"]
    assert "- sleep: 1 delta(s), last" in results["dormant"] and "rover" not in results["dormant"]
    assert results["needs"] == "error: tagged needs tags or kind"


def test_state_pending_intents_proposals_mood_crystal_and_recent(scripted_llm, session):
    workspace = session.workspace
    earlier = message_send(session=session, content="remind me about the dune")
    proposal_draft(workspace=workspace, tool="routines", title="morning digest", producer="test",
                   payload={"name": "digest", "schedule": "0 7 * * *", "prompt": "digest"})
    deltas_create(workspace=workspace, items=[
        {"content": "+0.1 curiosity: new things", "tags": ["kind:mood-shift", "axis:curiosity", "direction:+"]},
        {"content": "+0.05 curiosity: more", "tags": ["kind:mood-shift", "axis:curiosity", "direction:+"]},
        {"content": "-0.2 calm: rushed", "tags": ["kind:mood-shift", "axis:calm", "direction:-"]},
        {"content": "I notice I like maps.", "tags": ["kind:standpoint-attestation"]},
        {"content": "The operator is drifting toward robotics.", "tags": ["kind:orient", session.tag]},
        {"content": "in the river", "tags": [session.tag]},
    ])
    message_send(session=session, content="what's open?")
    scripted_llm.reply(tool_calls=[
        {"id": "intents", "name": "state", "arguments": {"action": "pending_intents"}},
        {"id": "proposals", "name": "state", "arguments": {"action": "proposals"}},
        {"id": "mood", "name": "state", "arguments": {"action": "mood"}},
        {"id": "crystal", "name": "state", "arguments": {"action": "crystal"}},
        {"id": "river", "name": "state", "arguments": {"action": "recent", "river": True}},
        {"id": "recent", "name": "state", "arguments": {"action": "recent", "limit": 3}},
    ])
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "here"}}]).call_tool("skip")
    assert session_tick(session_id=session.pk) == "ended"
    results = received(scripted_llm.sent[1])
    # both messages were taken up by this turn: the two are open until addressed
    assert f"[{earlier.pk}]" in results["intents"] and "remind me about the dune" in results["intents"]
    assert "(in this fire)" in results["intents"] and "what's open?" in results["intents"]
    assert "routines [pending] morning digest (by test" in results["proposals"]
    mood = results["mood"].splitlines()
    assert mood[1:3] == ["- calm: -0.20", "- curiosity: +0.15"]
    assert "drifting toward robotics" in results["crystal"] and "I like maps" in results["crystal"]
    assert "in the river" in results["river"] and "I like maps" not in results["river"]
    assert results["recent"].startswith("most recent deltas, newest first (3 of 7")  # the draft's kind:proposal too


def test_state_without_a_session_says_so(scripted_llm, workspace):
    _, results = run_tools(scripted_llm, workspace, [("i", "state", {"action": "pending_intents"}),
                                                     ("p", "state", {"action": "proposals"}),
                                                     ("c", "state", {"action": "crystal"})], question="why?")
    assert results["i"] == "this fire has no session; its question:\n- why?"
    assert results["p"] == "no proposals are waiting for a decision"
    assert "current orient: none yet" in results["c"]


def test_relate_contact_engagement_dropped_cited_by_and_link(scripted_llm, workspace):
    ann = delta_create(workspace=workspace, content="call with Ann about maps", tags=["contact:ann", "topic:maps"],
                       created_at=at(hours=5))
    mail = delta_create(workspace=workspace, content="Ann's reply", source="ann", tags=["topic:maps"],
                        created_at=at(hours=4))
    other = delta_create(workspace=workspace, content="unrelated", created_at=at(days=3))
    episode = provenance_create(workspace=workspace, title="maps with Ann", child_ids=[ann.pk, mail.pk])
    deltas_create(workspace=workspace, items=[
        {"content": "a fire's card about maps", "tags": ["kind:card", "fire:f9"]},
        {"content": f"affirms {ann.pk}", "tags": ["kind:engagement-attest", f"affirms:{ann.pk}", "fire:f9"]},
        {"content": f"affirms {mail.pk}", "tags": ["kind:engagement-attest", f"affirms:{mail.pk}", "fire:f9"]},
        {"content": f"refutes {other.pk}", "tags": ["kind:engagement-attest", f"refutes:{other.pk}", "fire:f9"]},
        {"content": "more maps please", "tags": ["kind:engagement", "engagement:more", f"target:{ann.pk}"]},
    ])
    _, results = run_tools(scripted_llm, workspace, [
        ("contact", "relate", {"action": "with_contact", "contact": "ann"}),
        ("one", "relate", {"action": "engagement", "delta_id": ann.pk}),
        ("all", "relate", {"action": "engagement"}),
        ("dropped", "relate", {"action": "dropped_around", "at": "1m", "minutes": 30}),
        ("cited", "relate", {"action": "cited_by", "delta_id": ann.pk[:10]}),
        ("link", "relate", {"action": "link", "delta_id": ann.pk, "other_id": mail.pk}),
        ("none", "relate", {"action": "link", "delta_id": ann.pk, "other_id": other.pk}),
    ])
    assert f"[{ann.pk}]" in results["contact"] and f"[{mail.pk}]" in results["contact"]
    assert other.pk not in results["contact"]
    assert "cited (affirms) 1, dropped (refutes) 0, engaged more 1, engaged less 0" in results["one"]
    assert "2 citation(s) affirmed, 1 dropped" in results["all"] and "more maps please" in results["all"]
    assert f"- [{other.pk}] dropped at" in results["dropped"] and "by fire:f9" in results["dropped"]
    assert "unrelated" in results["dropped"]
    assert "cited by 1 fire(s)" in results["cited"] and "a fire's card about maps" in results["cited"]
    assert f"[{episode.pk}]" in results["cited"]
    link = results["link"]
    assert "- time: 1.0 hours apart" in link and "- shared tags: topic:maps" in link
    assert f"- provenance containing both: [{episode.pk}] L1 maps with Ann" in link
    assert "- cited together by: fire:f9" in link
    assert "provenance containing both: none" in results["none"] and "shared tags: none" in results["none"]


def test_lenses_see_only_their_own_workspace(scripted_llm, workspace, other_workspace):
    theirs = delta_create(workspace=other_workspace, content="their secret", tags=["kind:note", "contact:ann"])
    delta_create(workspace=workspace, content="mine", tags=["kind:note"])
    _, results = run_tools(scripted_llm, workspace, [
        ("tagged", "pattern", {"action": "tagged", "kind": "note"}),
        ("count", "pattern", {"action": "count_by"}),
        ("contact", "relate", {"action": "with_contact", "contact": "ann"}),
        ("between", "time", {"action": "between", "since": "1d"}),
        ("cited", "relate", {"action": "cited_by", "delta_id": theirs.pk}),
    ])
    assert all("their secret" not in text for text in results.values())
    assert "- note: 1" in results["count"]
    assert results["cited"].startswith("error: no delta")


def test_pending_intents_tells_this_fires_messages_from_ones_that_wait(scripted_llm, session):
    taken = message_send(session=session, content="first question")
    waiting = message_send(session=session, content="sent while the fire runs")
    assert claims.claim(Session, session.pk, stale_after=60)  # as the session's turn would hold it
    _, results = run_tools(scripted_llm, session.workspace, [("i", "state", {"action": "pending_intents"})],
                           session=session, mode="reactive",
                           messages=[{"id": str(taken.pk), "content": taken.content}])
    lines = results["i"].splitlines()
    assert lines[0] == "unaddressed messages of this session (2, oldest first):"
    assert f"[{taken.pk}]" in lines[1] and "(in this fire): first question" in lines[1]
    assert f"[{waiting.pk}]" in lines[2] and "(waiting for the next turn)" in lines[2]
