"""Every tool through the official MCP client, over stdio and streamable HTTP: what it answers, that it
answers only the key's workspace, that a viewer reads and never writes, and that bad input is a tool
error with the API's message, never a crash of the session."""

import json

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from festinger.models import Edge
from harness.fires.models import Fire
from harness.fires.services import fire_create
from harness.runtime.models import Trigger
from harness.runtime.services import session_create
from lake.models import Delta
from lake.services import delta_create
from proposals.models import Proposal
from tests.mcp.conftest import TOOLS, key_of, text_of

NOTES = ("The lighthouse keeper logs the foghorn test every Tuesday at noon.",
         "The harbour pilot boards inbound freighters two miles off the breakwater.",
         "The tide tables for the estuary are printed by the harbour office each March.")


def test_a_client_lists_the_tools_remembers_searches_and_views(connect, workspace):
    # given an operator's key
    key = key_of(workspace)

    async def scenario():
        async with connect(workspace, key) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            written = [(await client.call_tool("remember", {"content": note, "tags": ["kind:note", "topic:harbour"],
                                                            "source": "mcp-test"})).structured_content
                       for note in NOTES]
            again = await client.call_tool("remember", {"content": "keyed", "idempotency_key": "k-1"})
            replay = await client.call_tool("remember", {"content": "keyed", "idempotency_key": "k-1"})
            found = await client.call_tool("search", {"query": "harbour lighthouse tide", "mode": "text",
                                                      "tags": ["topic:harbour"]})
            viewed = await client.call_tool("view_delta", {"id": written[1]["id"][:8]})
            resource = await client.read_resource(f"fathom://deltas/{written[2]['id']}")
            return tools, written, again, replay, found, viewed, resource

    tools, written, again, replay, found, viewed, resource = anyio.run(scenario)
    # then it lists every tool
    assert tools == TOOLS
    # the notes are written, in the key's workspace, as REST writes them
    assert [w["content"] for w in written] == list(NOTES)
    assert Delta.objects.filter(workspace=workspace, source="mcp-test").count() == 3
    # a retry with the same key writes nothing twice and says so
    assert (again.structured_content["replayed"], replay.structured_content["replayed"]) == (False, True)
    assert replay.structured_content["id"] == again.structured_content["id"]
    assert Delta.objects.filter(workspace=workspace, content="keyed").count() == 1
    # search finds all three, its text the recall a model reads, with the ids to cite
    assert not found.is_error
    hits = {row["id"] for row in found.structured_content["rows"] if row["role"] == "hit"}
    assert hits == {w["id"] for w in written}
    assert all(f"[{w['id']}" in text_of(found) for w in written)
    # a delta opens whole by a prefix, with its provenance, and as a resource
    assert (viewed.structured_content["id"], viewed.structured_content["content"]) == (written[1]["id"], NOTES[1])
    assert viewed.structured_content["parents"] == [] and viewed.structured_content["children"] == []
    assert json.loads(resource.contents[0].text)["content"] == NOTES[2]


def test_the_world_model_and_proposal_tools_act_in_the_keys_workspace(connect, workspace):
    # given an operator's key and two notes
    key = key_of(workspace)
    notes = [delta_create(workspace=workspace, content=text).pk for text in NOTES[:2]]

    async def scenario():
        async with connect(workspace, key) as client:
            fact = await client.call_tool("iknowthat", {"fact": "gnommoweb -isa repo in context of Glitch University"})
            preview = await client.call_tool("preview_recollection", {"text": "Please update gnommoweb"})
            episode = await client.call_tool("draft_proposal", {
                "tool": "provenance", "title": "The harbour's routines", "level": 1,
                "payload": {"from_ids": notes, "summary": "How the harbour keeps time"}})
            era = await client.call_tool("draft_proposal", {
                "tool": "provenance", "title": "The harbour years", "level": 3,
                "payload": {"from_ids": notes, "summary": "Years of the harbour"}})
            pending = await client.call_tool("list_pending_proposals", {})
            return fact, preview, episode, era, pending

    fact, preview, episode, era, pending = anyio.run(scenario)
    # then the fact is an edge of this workspace's world model, at full confidence
    edge = fact.structured_content["edge"]
    assert (fact.structured_content["result"], edge["concept"], edge["parent"], edge["confidence"]) == (
        "edge", "gnommoweb", "repo", 1.0)
    assert Edge.objects.filter(workspace=workspace, concept__token="gnommoweb").exists()
    assert not preview.is_error and {"active", "block", "recalled", "unknown"} <= set(preview.structured_content)
    # an L1 provenance is approved by the auto-policy; an L3 one waits, and is the one pending
    assert (episode.structured_content["status"], era.structured_content["status"]) == ("approved", "pending")
    assert episode.structured_content["producer"].startswith("apikey:")
    assert [p["id"] for p in pending.structured_content["proposals"]] == [era.structured_content["id"]]


def test_a_key_of_another_workspace_sees_nothing_of_this_one(connect, workspace, other_workspace):
    # given workspace A's notes and proposal, and a key of workspace B
    note = delta_create(workspace=workspace, content="The vault code is kept by the harbour master.",
                        tags=["kind:note"])
    other_key = key_of(other_workspace)
    Proposal.objects.create(workspace=workspace, tool="provenance", title="A's episode", payload={})
    session = session_create(workspace=workspace, title="A's conversation")
    fire = fire_create(workspace=workspace, mode=Fire.Mode.INTROSPECTIVE, question="What is the vault code?")

    async def resource_error(client, uri):
        try:
            await client.read_resource(uri)
        except MCPError as exc:
            return str(exc)
        return None

    async def scenario():
        async with connect(other_workspace, other_key) as client:
            found = await client.call_tool("search", {"query": "vault code harbour master", "mode": "text"})
            viewed = await client.call_tool("view_delta", {"id": note.pk})
            pending = await client.call_tool("list_pending_proposals", {})
            asked = await client.call_tool("ask", {"question": "What is the vault code?", "session_id": str(session.pk)})
            errors = [await resource_error(client, f"fathom://deltas/{note.pk}"),
                      await resource_error(client, f"fathom://fires/{fire.pk}")]
            return found, viewed, pending, asked, errors

    found, viewed, pending, asked, errors = anyio.run(scenario)
    # then B finds, opens and lists nothing of A's, by any tool or resource
    assert note.pk not in json.dumps(found.structured_content) and found.structured_content["rows"] == []
    assert viewed.is_error and note.pk in text_of(viewed) and "no delta" in text_of(viewed)
    assert pending.structured_content == {"proposals": []}
    assert asked.is_error and f"no session {session.pk}" in text_of(asked)
    assert "no delta" in errors[0] and f"no fire {fire.pk}" in errors[1]
    # and asks nothing in A's conversation
    assert not Trigger.objects.filter(session=session).exists()


def test_a_viewer_reads_and_never_writes(connect, workspace):
    # given a viewer's key, and a note
    note = delta_create(workspace=workspace, content="The ferry leaves at seven.", tags=["kind:note"])
    key = key_of(workspace, role="viewer")
    writes = {"remember": {"content": "not allowed"},
              "ask": {"question": "When does the ferry leave?"},
              "introspect": {"question": "What do I know?"},
              "draft_proposal": {"tool": "provenance", "title": "t", "payload": {"from_ids": [note.pk]}},
              "iknowthat": {"fact": "ferry -isa boat"}}

    async def scenario():
        async with connect(workspace, key) as client:
            refused = {name: await client.call_tool(name, arguments) for name, arguments in writes.items()}
            read = await client.call_tool("view_delta", {"id": note.pk})
            found = await client.call_tool("search", {"query": "ferry", "mode": "text"})
            preview = await client.call_tool("preview_recollection", {"text": "the ferry"})
            return refused, read, found, preview

    refused, read, found, preview = anyio.run(scenario)
    # then every write is refused with REST's message, and nothing is written
    for name, result in refused.items():
        assert result.is_error, name
        assert text_of(result).endswith(": your role in this workspace does not allow this"), name
    assert Delta.objects.filter(workspace=workspace).count() == 1
    assert not Proposal.objects.filter(workspace=workspace).exists()
    # and it reads
    assert not read.is_error and not found.is_error and not preview.is_error


BAD_INPUT = [
    ("search", {"query": ""}, "query: This field may not be blank."),
    ("search", {"query": "x", "limit": 0}, "limit: Ensure this value is greater than or equal to 1."),
    ("search", {"query": "x", "since": "last week"}, "filters.since: Datetime has wrong format."),
    ("search", {"query": "x", "mode": "sideways"}, "mode"),
    ("view_delta", {"id": "zz"}, "'zz' is not a delta id (hex characters)"),
    ("remember", {"content": "x", "created_at": "yesterday"}, "created_at: Datetime has wrong format."),
    ("remember", {"content": "x", "tags": ["t" * 201]}, "tags"),
    ("remember", {"content": "x", "idempotency_key": "k" * 256}, "Idempotency-Key: at most 255 characters"),
    ("ask", {"question": ""}, "content: This field may not be blank."),
    ("ask", {"question": "q", "session_id": "not-a-session"}, "no session"),
    ("introspect", {"question": ""}, "question: This field may not be blank."),
    ("draft_proposal", {"tool": "teleport", "title": "t", "payload": {}}, "teleport"),
    ("list_pending_proposals", {"limit": 0}, "limit"),
    ("iknowthat", {"fact": "no arrow here"}, "-isa"),
    ("preview_recollection", {"text": ""}, "text: This field may not be blank."),
]


def test_bad_input_to_each_tool_is_a_tool_error_with_the_apis_message(connect, workspace):
    # given an operator's key
    key = key_of(workspace)

    async def scenario():
        async with connect(workspace, key) as client:
            answers = [await client.call_tool(name, arguments) for name, arguments, _ in BAD_INPUT]
            still = await client.call_tool("search", {"query": "anything", "mode": "text"})
            return answers, still

    answers, still = anyio.run(scenario)
    # then each answer is a tool error carrying the message REST gives
    for (name, arguments, message), answer in zip(BAD_INPUT, answers, strict=True):
        assert answer.is_error, (name, arguments)
        assert message in text_of(answer), (name, text_of(answer))
    # and the session goes on
    assert not still.is_error
    assert tuple(sorted(TOOLS)) == tuple(sorted({name for name, _, _ in BAD_INPUT}))


@pytest.mark.parametrize("header, message", [
    ({}, "send 'Authorization: Bearer <api key>'"),
    ({"Authorization": "Bearer fth_nope_nope"}, "invalid or revoked API key"),
])
def test_http_without_a_valid_key_is_a_401_in_the_apis_envelope(live_server_url, transactional_db, header, message):
    response = httpx.post(f"{live_server_url}/mcp", headers={**header, "Accept": "application/json, text/event-stream"},
                          json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 401
    assert response.json() == {"error": {"code": "not_authenticated", "message": message, "details": {}}}
    assert response.headers["www-authenticate"] == "Bearer"


def test_http_from_a_host_not_allowed_is_a_400(live_server_url, transactional_db, workspace):
    response = httpx.post(f"{live_server_url}/mcp", headers={"Host": "rebound.example", "Authorization":
                                                             f"Bearer {key_of(workspace)}"},
                          json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"
