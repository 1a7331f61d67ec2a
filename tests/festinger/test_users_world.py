"""Festinger learns the user's world, not the harness's (issue 31): fires woken by a heartbeat and a
message, their system prompts, tool results, notes and the review pass, and a producer reading the
lake. A fire's recollection blocks name only words someone said; writer calls go to those words
only; a producer's reading counts no encounter."""

import re

from fathom.llm.offline import OFFLINE_NOTICE
from festinger import cache, recollection
from festinger.text import tokenize
from harness.autonomy.producers.services import producer_run, producer_run_request
from harness.runtime.models import Trigger
from harness.runtime.services import message_send, session_create, trigger_enqueue
from lake.services import deltas_create
from tests.harness.support import session_tick

SAID = ["Is gnommoweb deployed on the Glitch University cluster yet?",
        "Did the gnommoweb deploy break the Glitch University login page?",
        "Who owns gnommoweb at Glitch University now?",
        "Can the gnommoweb team roll back the Glitch University release?"]
NOTICE = "every 60s: taskdone check"  # a heartbeat's content: the fire reads it as "[Heartbeat] every 60s: ..."
ANSWER = "The gnommoweb release at Glitch University is rolled out; the login page works."
BLOCK = re.compile(r"<recollection>\n(.*?)\n</recollection>", re.DOTALL)


def concepts(block: str) -> set[str]:
    """The concepts a recollection block names: `token: [dim] parent` and `? token: no recollection`."""
    return {line.removeprefix("? ").split(":", 1)[0] for line in block.splitlines() if ":" in line
            and not line.startswith(" ")}


def test_a_fires_recollections_hold_none_of_the_harness_words(world, scripted_llm, monkeypatch,
                                                             django_capture_on_commit_callbacks):
    # given a session whose every turn is woken by a heartbeat and a question, answered by a model that
    # searches the lake and responds, and writer calls counted as they are queued
    writes = []
    monkeypatch.setattr(recollection, "signature", lambda name: type("S", (), {
        "delay": staticmethod(lambda *args: writes.append(args[1]) if name.endswith("concept_write") else None)}))
    deltas_create(workspace=world, items=[{"content": "gnommoweb runs on the Glitch University cluster"}])
    session = session_create(workspace=world, title="users world")
    for text in SAID:
        scripted_llm.reply("Let me check the lake first.",
                           tool_calls=[{"name": "semantic", "arguments": {"query": "gnommoweb deploy"}}])
        scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": ANSWER}}])
        scripted_llm.call_tool("skip", {"reason": "nothing to consolidate"})
        with django_capture_on_commit_callbacks(execute=True):
            trigger_enqueue(session=session, kind=Trigger.Kind.HEARTBEAT, content=NOTICE)
            message_send(session=session, content=text)
            session_tick(session_id=session.pk)

    # when the recollection blocks the fires' model calls were sent are read
    sent = [request for request in scripted_llm.sent if request.role == "main"]
    blocks = [m.group(1) for request in sent for message in request.messages if message.role == "system"
              for m in BLOCK.finditer(message.content)]
    named = set().union(*(concepts(block) for block in blocks))
    users_words = set(tokenize(" ".join([*SAID, ANSWER, "Let me check the lake first."])))
    harness_words = {token for request in sent for message in request.messages
                     if message.role in ("system", "tool") or message.content.startswith(("[harness]", OFFLINE_NOTICE))
                     for token in tokenize(BLOCK.sub("", message.content))}
    harness_words = (harness_words | set(tokenize(f"[Heartbeat] {NOTICE}"))) - users_words
    print(f"\nrecollection blocks: {len(blocks)}; concepts named: {sorted(named)}; harness words among them: "
          f"{sorted(named & harness_words)} ({len(named & harness_words)}/{len(named) or 1}); writer calls: "
          f"{len(writes)} over {len(SAID)} fires {sorted(writes)}")

    # then the blocks name the user's world, none of the harness's words, and only its words go to the writer
    assert blocks and "gnommoweb" in named and "glitch_university" in named
    assert named & harness_words == set()
    assert set(writes) <= users_words and len(writes) <= len(SAID)


def test_a_producers_reading_counts_no_encounter(world, scripted_llm):
    # given forty deltas about urchins, read by a topical producer run
    deltas_create(workspace=world, items=[{"content": f"urchin survey {i}: the urchin grazes"} for i in range(40)])
    run = producer_run_request(workspace=world, producer="topical", origin="api")
    scripted_llm.call_tool("propose", {"proposals": []})
    # when it runs
    assert producer_run(run_id=run.pk).read == 40
    # then urchin was read, and counted as no encounter
    print(f"\nurchin encounters after a producer read 40 deltas: {cache.world(world.pk).encounters('urchin')}")
    assert cache.world(world.pk).encounters("urchin") == 0
