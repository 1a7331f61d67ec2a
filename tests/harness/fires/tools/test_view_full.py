"""view_full(delta_id): one delta whole, by id or prefix, in the fire's workspace only."""

from lake.services import delta_create
from tests.harness.tool_fire import run_tools


def test_view_full_shows_a_delta_whole_with_its_tags(scripted_llm, workspace):
    long = "the rover log " + "and then the dune " * 400
    delta = delta_create(workspace=workspace, content=long, tags=["kind:log", "rover"], source="log")
    _, results = run_tools(scripted_llm, workspace, [("a", "view_full", {"delta_id": delta.id}),
                                                      ("b", "view_full", {"delta_id": delta.id[:10]})])
    assert results["a"].endswith(long) and "tags: kind:log rover" in results["a"] and " log\n" in results["a"]
    assert results["b"] == results["a"]


def test_view_full_of_another_workspaces_delta_is_an_error_the_model_reads(scripted_llm, workspace, other_workspace):
    theirs = delta_create(workspace=other_workspace, content="not yours")
    _, results = run_tools(scripted_llm, workspace, [("a", "view_full", {"delta_id": theirs.id})])
    assert results["a"].startswith("error:") and "not yours" not in results["a"]
