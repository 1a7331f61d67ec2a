"""`ask` and `introspect` through the official MCP client, over stdio and HTTP, with a real Celery
worker: the question is answered by a session's fire through the quality harness (scripted models),
its progress reported as MCP progress notifications, its answer cited and checked; a client that cancels
the call mid-way cancels the fire."""

import anyio
import pytest

from harness.fires.models import Fire
from harness.runtime.models import Trigger
from tests.conftest import wait_for
from tests.harness.quality.conftest import classification, verdict
from tests.harness.support import session_tick
from tests.mcp.conftest import LEGACY_HTTP, TRANSPORTS, key_of, text_of

NOTES = ("The lighthouse keeper logs the foghorn test every Tuesday at noon.",
         "The foghorn at the north mole was replaced in 2019 with an electric one.",
         "The foghorn is silenced during the harbour festival in August.")
QUESTION = "What do the notes say about the foghorn?"

pytestmark = [pytest.mark.worker, pytest.mark.slow]


class Progress:
    """An MCP progress callback: the messages heard, and `heard` set at the first that starts with
    `prefix`."""

    def __init__(self, prefix: str = ""):
        self.messages: list[str] = []
        self.prefix = prefix
        self.heard = anyio.Event()

    async def __call__(self, done, total, message):
        self.messages.append(message)
        if message.startswith(self.prefix):
            self.heard.set()


async def ask_cancelled(client, question: str, *, once: str) -> None:
    """`ask` called with `question`, and the call cancelled once its progress says `once`."""
    progress = Progress(once)
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: client.call_tool("ask", {"question": question}, progress_callback=progress))
        with anyio.fail_after(60):
            await progress.heard.wait()
        group.cancel_scope.cancel()


@pytest.mark.parametrize("connect", [*TRANSPORTS, LEGACY_HTTP], indirect=True)
def test_ask_answers_from_the_remembered_notes_with_its_verdict_and_citations(connect, workspace, roles,
                                                                               celery_worker):
    # given an operator's key, and the models' answers: a chat question, answered after a search,
    # citing the three notes, passed by the verifier
    key = key_of(workspace)
    progress = Progress()

    async def scenario():
        async with connect(workspace, key) as client:
            # when the client remembers three notes, finds them, and asks about them
            ids = [(await client.call_tool("remember", {"content": note, "tags": ["kind:note"]})).structured_content["id"]
                   for note in NOTES]
            found = await client.call_tool("search", {"query": "foghorn", "mode": "text"})
            body = (f"The foghorn is tested every Tuesday at noon [{ids[0]}], was replaced with an electric one in "
                    f"2019 [{ids[1]}], and is silenced during the August festival [{ids[2]}].")
            roles.classifier.reply(classification("SIMPLE", "chat"))
            roles.main.call_tool("semantic", {"query": "foghorn"})
            roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": body, "cited_ids": ids}}])
            roles.verifier.reply(verdict(0.9))
            roles.main.call_tool("skip", {"reason": "-"})
            answered = await client.call_tool("ask", {"question": QUESTION, "wait_seconds": 120},
                                              progress_callback=progress)
            cited = answered.structured_content["citations"][1]["id"]
            viewed = await client.call_tool("view_delta", {"id": cited})
            fire = await client.read_resource(answered.structured_content["resource"])
            return ids, found, answered, viewed, fire, body

    ids, found, answered, viewed, fire, body = anyio.run(scenario)
    # then search found the notes, and the answer is the fire's, checked and passed, citing them
    assert {row["id"] for row in found.structured_content["rows"]} == set(ids)
    assert not answered.is_error, text_of(answered)
    answer = answered.structured_content
    assert (answer["status"], answer["answer"], answer["verdict"]) == ("finished", body, {"status": "passed",
                                                                                          "reasons": []})
    assert [c["id"] for c in answer["citations"]] == ids
    assert text_of(answered).startswith(body) and "verdict: passed" in text_of(answered)
    assert Fire.objects.get(pk=answer["fire_id"]).session.workspace_id == workspace.pk
    assert roles.calls()["verifier"] == 1
    # the client heard the fire move: waiting (queued, or running), then finished
    assert len(progress.messages) >= 2 and progress.messages[0].startswith(("queued:", "running:"))
    assert progress.messages[-1] == "finished: responded"
    # and the cited delta opens whole, and the fire as a resource
    assert viewed.structured_content["content"] == NOTES[1]
    assert answer["fire_id"] in fire.contents[0].text


@pytest.mark.parametrize("connect", [*TRANSPORTS, LEGACY_HTTP], indirect=True)
def test_cancelling_a_long_ask_mid_way_cancels_its_fire(connect, workspace, roles, celery_worker):
    # given a question whose main model call takes long
    key = key_of(workspace)
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "Too late to matter, this answer."}}],
                     latency=6)

    async def scenario():
        async with connect(workspace, key) as client:
            # when the client cancels the call once the fire runs
            await ask_cancelled(client, "When is high tide?", once="running:")
            # the session goes on
            return await client.call_tool("search", {"query": "tide", "mode": "text"})

    after = anyio.run(scenario)
    # then the fire ends cancelled, its answer never given
    fire = wait_for(lambda: Fire.objects.filter(workspace=workspace, status__in=Fire.TERMINAL).first(), timeout=60)
    assert (fire.status, fire.stop_reason) == ("cancelled", "cancelled")
    assert fire.cancel_requested_at is not None
    assert not after.is_error


def test_introspect_answers_its_card(connect, workspace, roles, celery_worker):
    # given an operator's key, and a main model that answers the introspective question at once
    key = key_of(workspace)
    roles.main.reply(tool_calls=[{"name": "respond", "arguments": {"body": "I hold notes about the harbour."}}])
    roles.main.call_tool("skip", {"reason": "-"})
    progress = Progress()

    async def scenario():
        async with connect(workspace, key) as client:
            return await client.call_tool("introspect", {"question": "What do you know?", "wait_seconds": 120},
                                          progress_callback=progress)

    answered = anyio.run(scenario)
    # then the introspective fire ran on the worker and its card is the answer
    assert not answered.is_error, text_of(answered)
    card = answered.structured_content
    assert (card["status"], card["body"]) == ("finished", "I hold notes about the harbour.")
    assert text_of(answered) == "I hold notes about the harbour."
    fire = Fire.objects.get(pk=card["fire_id"])
    assert (fire.workspace_id, fire.mode, fire.session_id) == (workspace.pk, "introspective", None)
    assert progress.messages[-1] == "finished: responded"


def test_cancelling_an_ask_no_worker_took_yet_withdraws_the_question(connect, workspace):
    # given no worker running: the question waits in its session
    key = key_of(workspace)

    async def scenario():
        async with connect(workspace, key) as client:
            # when the client cancels the call while it waits
            await ask_cancelled(client, "Is anyone there?", once="queued")

    anyio.run(scenario)
    # then the question is withdrawn: addressed, and no turn takes it
    message = wait_for(lambda: Trigger.objects.filter(workspace=workspace, addressed=True).first(), timeout=30)
    assert (message.state, message.addressed_note) == ("consumed", "withdrawn: its MCP client cancelled the call")
    assert session_tick(session_id=message.session_id) == "idle"
    assert not Fire.objects.filter(workspace=workspace).exists()
