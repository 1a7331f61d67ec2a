"""Plan drift and revisions: recorded on the fire (GET /v1/fires/{id}), traced, and streamed to the
session."""

from fathom.tracing.models import TraceEvent
from harness.fires.models import Fire
from harness.fires.tools.plan import drift_reason
from harness.runtime.models import SessionEvent
from harness.runtime.services import message_send
from tests.harness.support import session_tick

PLAN = [{"step": 1, "text": "semantic search for the rover", "status": "done"},
        {"step": 2, "text": "compare them", "status": "in_flight"}]


def test_drift_reasons():
    assert drift_reason([], "semantic", None) is None
    assert drift_reason(PLAN, "respond", None) is None
    assert drift_reason(PLAN, "semantic", None) == "no plan_step declared while a plan is active"
    assert drift_reason(PLAN, "semantic", 7) == "step 7 does not exist (the plan has 2 steps)"
    assert drift_reason(PLAN, "semantic", 1) == "step 1 is done already: going back to it"
    assert drift_reason(PLAN, "expand", 2) is None
    plan = [{**PLAN[0], "status": "pending"}, PLAN[1]]
    assert drift_reason(plan, "semantic", 1) is None
    assert drift_reason(plan, "time", 1) == "step 1 names semantic; time was called"


def test_drift_and_revision_are_recorded_traced_and_streamed(scripted_llm, api, session):
    message_send(session=session, content="compare the rover and the lake")
    scripted_llm.call_tool("plan", {"question": "compare", "steps": ["semantic search for the rover", "the lake"]})
    scripted_llm.call_tool("time", {"action": "help", "plan_step": 1}, id="drifted")
    scripted_llm.call_tool("plan", {"question": "compare", "steps": ["the lake", "the rover"],
                                    "why": "the lake matters more"}, id="revised")
    scripted_llm.reply(tool_calls=[respond("done", plan_step=None)])
    scripted_llm.call_tool("skip")
    session_tick(session_id=session.pk)
    fire = Fire.objects.get(session=session)
    drift, revision = fire.plan_events
    assert (drift["kind"], drift["call_id"], drift["tool"]) == ("drift", "drifted", "time")
    assert drift["reason"] == "step 1 names semantic; time was called"
    assert revision == {"kind": "revision", "turn": 3, "call_id": "revised", "why": "the lake matters more",
                        "before": ["semantic search for the rover", "the lake"], "after": ["the lake", "the rover"],
                        "added": ["the rover"], "dropped": ["semantic search for the rover"], "done_before": []}
    assert api.get(f"/v1/fires/{fire.pk}").json()["plan_events"] == fire.plan_events
    names = set(TraceEvent.objects.filter(trace_id=fire.trace_id).values_list("name", flat=True))
    assert {"plan.drift", "plan.revision"} <= names
    streamed = [e.data["plan_event"]["kind"] for e in SessionEvent.objects.filter(session=session).order_by("seq")
                if "plan_event" in e.data]
    assert streamed == ["drift", "revision"]


def test_calls_that_follow_the_plan_record_nothing(scripted_llm, session):
    message_send(session=session, content="x and y")
    scripted_llm.call_tool("plan", {"question": "x and y", "steps": ["x", "y"]})
    scripted_llm.call_tool("state", {"action": "help", "plan_step": 1})
    scripted_llm.call_tool("state", {"action": "help", "plan_step": 2})
    scripted_llm.reply(tool_calls=[respond("done")]).call_tool("skip")
    session_tick(session_id=session.pk)
    assert Fire.objects.get(session=session).plan_events == []


def respond(body, **extra):
    return {"name": "respond", "arguments": {"body": body, **{k: v for k, v in extra.items() if v is not None}}}
