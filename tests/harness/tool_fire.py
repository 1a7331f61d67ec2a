"""Run tool calls through a real fire with the scripted model, and read back what the model got."""

from harness.fires.models import Fire
from harness.fires.services import fire_create, fire_run


def run_tools(script, workspace, calls, *, respond=None, question="look", session=None, mode="introspective",
              **fire_options) -> tuple[Fire, dict]:
    """One fire whose first turn makes `calls` ([(id, name, arguments)]), then responds and skips the
    review. Returns the fire and {call id: the tool result the model received on its next turn}."""
    fire = fire_create(workspace=workspace, mode=mode, question=question, session=session, **fire_options)
    sent_before = len(script.sent)
    script.reply(tool_calls=[{"id": cid, "name": name, "arguments": args} for cid, name, args in calls])
    script.reply(tool_calls=[{"name": "respond", "arguments": respond or {"body": "done"}}])
    script.call_tool("skip")
    fire = fire_run(fire_id=fire.pk)
    assert fire.status == "finished", fire.error
    return fire, received(script.sent[sent_before + 1])


def received(request) -> dict:
    return {m.tool_call_id: m.content for m in request.messages if m.role == "tool"}
