"""The self-echo check (issue 31): one question asked five times over REST, then searched over REST.
The agent's own output (Q/A markers, cards, insights; after the marker dedup its fold, proposal and
decision too) is at most one of the top 5, and the source notes are in the answer, within its budget."""

from harness.autonomy.tasks import qa_marker_dedup
from lake.models import Delta, is_agent_output
from lake.services import delta_create, deltas_embed
from tests.harness.support import session_tick

QUESTION = "Where does the octopus in the tide pool hide at low tide?"
SOURCES = [
    "Low tide, north ledge: the octopus hides under the ledge in the tide pool, only an arm showing.",
    "The octopus in the tide pool changed colour to match the rock at low tide.",
    "Tide pool survey: the octopus den is a crack under the north ledge.",
    "At low tide the octopus hides in the tide pool's deepest corner, away from the gulls.",
    "Saw the tide pool octopus again at low tide; it squeezed into a hole under the ledge.",
    "The octopus shares the tide pool with two crabs and a sea star; it hides when the tide is low.",
]
FILLER = ["The lighthouse keeper logs the storms.", "Bread rises better in a warm kitchen.",
          "The bus to the harbour leaves at seven.", "Moss grows on the north side of the old wall."]


def ask(api, scripted_llm, session, sources):
    ids = [s.pk for s in sources]
    scripted_llm.reply(tool_calls=[{"id": "s", "name": "semantic", "arguments": {"query": QUESTION}}])
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {
        "body": "At low tide the octopus hides under the north ledge of the tide pool, in a crack it squeezes into.",
        "cited_ids": ids, "cards": [{"kind": "insight", "body": "The tide pool octopus hides under the north ledge "
                                                                "at low tide.", "citations": [{"id": ids[0]}]}]}}])
    scripted_llm.call_tool("skip")
    response = api.post(f"/v1/sessions/{session.pk}/messages", {"content": QUESTION}, format="json")
    assert response.status_code == 202, response.content
    assert session_tick(session_id=session.pk) == "ended"


def search(api, workspace) -> dict:
    deltas_embed(delta_ids=list(Delta.objects.filter(workspace=workspace).values_list("id", flat=True)))
    response = api.post("/v1/search", {"query": QUESTION, "limit": 10}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def own_in_top_5(result: dict) -> list[dict]:
    hits = sorted((row for row in result["rows"] if row["role"] == "hit"), key=lambda row: row["rank"])
    assert len(hits) >= 5
    return [row for row in hits[:5] if is_agent_output(source=row["source"], tags=row["tags"])]


def markers_shown(result: dict, marker_ids: set[str]) -> tuple[list[dict], list[str]]:
    """The markers among the hits and the containers, and the rendered containers block's lines naming the question."""
    shown = [row for row in result["rows"] if row["id"] in marker_ids]
    block = result["rendered"].split("containers active in this recall:", 1)[-1].split("\n\n", 1)[0]
    return shown, [line for line in block.splitlines() if QUESTION in line]


def test_a_question_asked_five_times_finds_its_sources_not_its_echo(api, scripted_llm, session, workspace):
    # given source notes (and unrelated ones) in the lake, and the question asked five times over REST
    sources = [delta_create(workspace=workspace, content=text, source="notes") for text in SOURCES]
    for text in FILLER:
        delta_create(workspace=workspace, content=text, source="notes")
    for _ in range(5):
        ask(api, scripted_llm, session, sources)
    assert Delta.objects.filter(workspace=workspace, tags__contains=["kind:qa-marker"]).count() == 5

    # when it is searched: at most one of the top 5 is the agent's own output, the sources are in the answer
    result = search(api, workspace)
    assert len(own_in_top_5(result)) <= 1, [row["tags"] for row in own_in_top_5(result)]
    assert all(f"[{source.pk}]" in result["rendered"] for source in sources), result["budget"]
    # the markers holding the sources are one line of the containers block, standing for the others
    markers = set(Delta.objects.filter(workspace=workspace, tags__contains=["kind:qa-marker"]).values_list("id", flat=True))
    shown, lines = markers_shown(result, markers)
    containers = [row for row in shown if row["role"] == "container"]
    assert len(containers) == 1 and len(lines) == 1, lines
    assert {row["id"] for row in shown} | set(containers[0]["alike"]) == markers
    assert f"(and {len(containers[0]['alike'])} more alike)" in lines[0]

    # and the same after the marker dedup folded the five markers into one episode
    assert qa_marker_dedup() == 1
    assert Delta.objects.filter(workspace=workspace, tags__contains=["kind:provenance", "qa-dedup"]).count() == 1
    result = search(api, workspace)
    assert len(own_in_top_5(result)) <= 1, [row["tags"] for row in own_in_top_5(result)]
    assert all(f"[{source.pk}]" in result["rendered"] for source in sources), result["budget"]
