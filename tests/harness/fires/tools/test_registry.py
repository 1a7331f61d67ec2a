"""The tool surface as a fire shows it: every tool of seed 000's table registered with a valid schema,
listed to the model, filtered by the fire's disabled_tools, accepting plan_step; errors of any kind
come back to the model as the tool result."""

import jsonschema

from harness.fires.models import FireToolCall
from harness.fires.tools.base import MAIN, REVIEW, tools_for
from tests.harness.tool_fire import run_tools

SEED_ORDER = ["plan", "semantic", "expand", "ascend", "deliberate", "state", "pattern", "time", "relate",
              "web_search", "introspect", "dispatch_helper", "mint_routine", "orient_shift", "mark_addressed", "see_image",
              "engage_feed", "fs_list", "fs_read", "fs_write", "fs_replace", "task_cancel", "wait", "view_full",
              "respond"]
SEED_TOOLS = set(SEED_ORDER)


def test_every_tool_of_the_seed_is_registered_with_a_valid_schema():
    main = {t.name: t for t in tools_for(phase=MAIN)}
    assert set(main) == SEED_TOOLS
    assert {t.name for t in tools_for(phase=REVIEW)} == {"propose_provenance", "skip"}
    for tool in [*main.values(), *tools_for(phase=REVIEW)]:
        jsonschema.Draft202012Validator.check_schema(tool.spec().parameters)
        assert tool.description.strip(), tool.name


def test_the_model_is_offered_and_told_every_tool_of_its_fire(scripted_llm, workspace):
    run_tools(scripted_llm, workspace, [("s", "state", {"action": "help"})])
    request = scripted_llm.sent[0]
    assert request.tool_names == SEED_ORDER  # the seed's table order: peers first, respond last
    system = request.messages[0].content
    listed = system.split("Your tools in this fire: ", 1)[1].split(".\n", 1)[0].split(", ")
    assert set(listed) == SEED_TOOLS
    for name in SEED_TOOLS - {"plan", "respond", "mark_addressed"}:  # the guidance names each one in context
        assert f"`{name}`" in system, name
    # every tool but respond takes plan_step
    assert all("plan_step" in t["parameters"]["properties"] for t in request.tools if t["name"] != "respond")


def test_disabled_tools_are_neither_offered_nor_runnable(scripted_llm, workspace):
    _, results = run_tools(scripted_llm, workspace, [
        ("e", "engage_feed", {"kind": "more", "reason": "boats"}),
        ("t", "time", {"action": "help"}),
    ], disabled_tools=["engage_feed", "orient_shift"])
    offered = set(scripted_llm.sent[0].tool_names)
    assert offered == SEED_TOOLS - {"engage_feed", "orient_shift"}
    assert "Not available in this fire: engage_feed, orient_shift." in scripted_llm.sent[0].messages[0].content
    assert results["e"].startswith("error: unknown tool 'engage_feed'; the tools of this fire are:")
    assert results["t"].startswith("time actions:")


def test_plan_step_is_accepted_by_every_tool_and_recorded(scripted_llm, workspace):
    fire, results = run_tools(scripted_llm, workspace, [
        ("p", "plan", {"question": "a and b", "steps": ["a", "b"]}),
        ("r", "relate", {"action": "help", "plan_step": 1}),
        ("l", "pattern", {"action": "count_by", "plan_step": 2}),
    ])
    assert not results["l"].startswith("error") and results["r"].startswith("relate actions:")
    recorded = dict(FireToolCall.objects.filter(fire=fire, turn__number=1).values_list("call_id", "plan_step"))
    assert recorded == {"p": None, "r": 1, "l": 2}
    plan_shown = scripted_llm.sent[1].messages[-1].content
    assert "✓ 1. a" in plan_shown and "⟳ 2. b" in plan_shown
    assert [s["status"] for s in fire.plan] == ["done", "done"]  # respond finishes the step in flight


def test_errors_of_the_new_tools_come_back_to_the_model(scripted_llm, workspace, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("the clock divided by zero")

    monkeypatch.setattr("harness.fires.tools.lens_time.deltas", broken)  # the lake read under time(between) fails
    fire, results = run_tools(scripted_llm, workspace, [
        ("malformed", "engage_feed", {"kind": "sideways"}),
        ("notobject", "see_image", {"_unparsed": '{"media_hash": sha256-x'}),
        ("typo", "relate", {"action": "link", "delta_id": 12}),
        ("unknown", "orient", {"reason": "x"}),
        ("raises", "time", {"action": "between", "since": "1d"}),
    ])
    assert results["malformed"].startswith("error: malformed arguments for engage_feed at kind: 'sideways' is not")
    assert results["notobject"] == 'error: arguments must be a JSON object, got \'{"media_hash": sha256-x\''

    assert results["typo"].startswith("error: malformed arguments for relate at delta_id: 12 is not of type")
    assert results["unknown"].startswith("error: unknown tool 'orient'")
    assert results["raises"] == "error: the tool raised ZeroDivisionError: the clock divided by zero"
    assert FireToolCall.objects.filter(fire=fire, ok=False).count() == 5
