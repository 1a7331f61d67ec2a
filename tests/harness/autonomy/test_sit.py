"""The autonomous Sit: the focus pre-pass is exactly one model call and its output is the Sit's
first prompt; a failed call falls back to the top signal's focus; the Sit runs in the autonomy
session, tagged autonomous, continues through next_prompt and stops; a start that dies after the
claim is queued again by a later sweep and the window still gets exactly one Sit; the focus call's
tokens count toward the daily token cap."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from fathom.tracing.models import TraceEvent
from harness.autonomy import services, tasks
from harness.autonomy.models import AutonomyDecision
from harness.autonomy.services import (
    SIT_START_ATTEMPTS,
    SIT_START_GRACE,
    autonomous_sit_start,
    autonomy_settings_get,
    autonomy_sweep,
)
from harness.fires.models import Fire
from harness.runtime.models import Trigger
from lake.models import Delta
from lake.services import deltas_create
from tests.harness.support import session_tick

NOON = datetime(2026, 11, 25, 12, 0, 30, tzinfo=UTC)


def respond(body, **extra):
    return {"name": "respond", "arguments": {"body": body, **extra}}


class WorkerDied(Exception):
    """Where the test kills the start: after the focus call, before the Sit's first message."""


def claimed(workspace, autonomy) -> AutonomyDecision:
    autonomy(mode="on", threshold=0.0, sit_rounds=3)
    autonomy_sweep(now=NOON)
    return AutonomyDecision.objects.get(workspace=workspace, action="sit")


def test_the_focus_pre_pass_is_one_call_and_its_output_the_first_prompt(workspace, autonomy, scripted_llm):
    deltas_create(workspace=workspace, items=[{"content": f"rover log {i}"} for i in range(5)])
    decision = claimed(workspace, autonomy)
    scripted_llm.call_tool("set_focus", {"focus": "What do the rover logs say about the wheel?"})
    decision = autonomous_sit_start(decision_id=decision.pk)
    assert len(scripted_llm.sent) == 1 and scripted_llm.sent[0].role == "focus"
    assert "rover log 4" in scripted_llm.sent[0].messages[-1].content  # the substrate signals it read
    assert (decision.focus, decision.focus_source) == ("What do the rover logs say about the wheel?", "model")
    trigger = decision.trigger
    assert trigger.content == decision.focus and trigger.source == "sit"
    assert trigger.payload["sit"] == {"round": 1, "cap": 3, "autonomous": str(decision.pk)}
    assert trigger.session.tag == "autonomy" and autonomy_settings_get(workspace=workspace).session == trigger.session
    # started again (a redelivered task), nothing more happens
    assert autonomous_sit_start(decision_id=decision.pk).trigger_id == trigger.pk
    assert len(scripted_llm.sent) == 1 and Trigger.objects.filter(workspace=workspace).count() == 1


def test_a_start_that_dies_after_the_claim_is_queued_again_and_the_window_gets_one_sit(
        workspace, autonomy, scripted_llm, monkeypatch, django_capture_on_commit_callbacks):
    # given a claimed window whose start task dies after the focus call, before the Sit's first message
    decision = claimed(workspace, autonomy)
    scripted_llm.reply(tool_calls=[{"name": "set_focus", "arguments": {"focus": "first try"}}],
                       input_tokens=40, output_tokens=10)

    def died(**kwargs):
        raise WorkerDied

    monkeypatch.setattr(services, "message_send", died)
    with pytest.raises(WorkerDied):
        tasks.autonomy_sit_start.apply(args=[decision.pk], throw=True)
    monkeypatch.undo()
    decision.refresh_from_db()
    assert (decision.sit_state, decision.trigger_id, decision.focus_tokens) == ("claimed", None, 50)

    # when the sweeps go on: within the grace nothing is queued, after it the start is queued once
    with django_capture_on_commit_callbacks() as queued:
        autonomy_sweep(now=NOON + timedelta(minutes=1))
    assert queued == []
    later = NOON + SIT_START_GRACE + timedelta(seconds=1)
    with django_capture_on_commit_callbacks() as queued:
        autonomy_sweep(now=later)
        autonomy_sweep(now=later + timedelta(seconds=5))  # another tick before the start ran
    assert len(queued) == 1
    decision.refresh_from_db()
    assert (decision.sit_state, decision.start_attempts) == ("claimed", 2)

    # then the queued start makes the window's one Sit, and nothing queues or starts another
    scripted_llm.reply(tool_calls=[{"name": "set_focus", "arguments": {"focus": "second try"}}],
                       input_tokens=30, output_tokens=5)
    tasks.autonomy_sit_start.apply(args=[decision.pk], throw=True)
    tasks.autonomy_sit_start.apply(args=[decision.pk], throw=True)  # the first attempt, redelivered late
    decision.refresh_from_db()
    assert (decision.sit_state, decision.focus, decision.focus_tokens) == ("started", "second try", 85)
    assert len(scripted_llm.sent) == 2
    with django_capture_on_commit_callbacks() as queued:
        autonomy_sweep(now=later + 2 * SIT_START_GRACE)
    assert queued == []
    sits = Trigger.objects.filter(workspace=workspace, source="sit")
    assert list(sits.values_list("content", flat=True)) == ["second try"]
    assert AutonomyDecision.objects.filter(workspace=workspace, action="sit").count() == 1


def test_a_claim_whose_start_keeps_dying_is_given_up_as_lost(
        workspace, autonomy, scripted_llm, django_capture_on_commit_callbacks):
    decision = claimed(workspace, autonomy)  # its start task is never run: every attempt "dies"
    moment = NOON
    with django_capture_on_commit_callbacks() as queued:
        for _ in range(SIT_START_ATTEMPTS):
            moment += SIT_START_GRACE + timedelta(seconds=1)
            autonomy_sweep(now=moment)
    decision.refresh_from_db()
    assert len(queued) == SIT_START_ATTEMPTS - 1 and decision.start_attempts == SIT_START_ATTEMPTS
    assert decision.sit_state == "lost" and "lost: none of 3 attempts" in decision.detail
    assert autonomous_sit_start(decision_id=decision.pk).trigger_id is None  # a late start makes nothing
    assert scripted_llm.sent == [] and not Trigger.objects.filter(workspace=workspace).exists()


def test_the_focus_calls_tokens_count_toward_the_daily_token_cap(workspace, autonomy, scripted_llm):
    decision = claimed(workspace, autonomy)
    autonomy(daily_token_cap=100, window_minutes=60)
    scripted_llm.reply(tool_calls=[{"name": "set_focus", "arguments": {"focus": "tides"}}],
                       input_tokens=90, output_tokens=20)
    decision = autonomous_sit_start(decision_id=decision.pk)
    assert decision.focus_tokens == 110 and not Fire.objects.filter(workspace=workspace).exists()
    autonomy_sweep(now=NOON + timedelta(hours=1))  # the next window: only the focus call spent tokens
    skip = AutonomyDecision.objects.filter(workspace=workspace).exclude(pk=decision.pk).get()
    assert (skip.action, skip.reason, skip.detail) == ("skip", "token_cap", "110 of 100 tokens today; the count starts again in 10 h 59 min")


def test_a_failed_focus_call_falls_back_to_the_top_signal(workspace, autonomy, scripted_llm):
    deltas_create(workspace=workspace, items=[{"content": f"unnamed moment {i}"} for i in range(60)])
    settings = autonomy(mode="on", threshold=0.0, weight_since_sit=0.0)
    assert settings.weight_since_sit == 0.0
    autonomy_sweep(now=NOON)
    decision = AutonomyDecision.objects.get(workspace=workspace, action="sit")
    scripted_llm.fail("bad_request", "no such model")
    decision = autonomous_sit_start(decision_id=decision.pk)
    assert len(scripted_llm.sent) == 1
    assert decision.focus_source == "fallback" and "no such model" in decision.focus_error
    assert decision.focus.startswith("At least 30 moments have accumulated") and "unnamed moment" in decision.focus
    assert decision.trigger.content == decision.focus


def test_a_seeded_autonomous_sit_continues_through_next_prompt_and_stops(workspace, autonomy, scripted_llm):
    decision = claimed(workspace, autonomy)
    scripted_llm.call_tool("set_focus", {"focus": "rivers"})
    decision = autonomous_sit_start(decision_id=decision.pk)
    session = decision.session
    scripted_llm.reply(tool_calls=[respond("rivers move", next_prompt="why do they move?")]).call_tool("skip")
    scripted_llm.reply(tool_calls=[respond("gravity, mostly")]).call_tool("skip")
    assert session_tick(session_id=session.pk) == "ended"
    assert session_tick(session_id=session.pk) == "ended"
    assert session_tick(session_id=session.pk) == "idle"  # round 2 omitted next_prompt: the Sit is over
    fires = list(Fire.objects.filter(session=session).order_by("created_at"))
    assert [f.work_set["messages"][0]["content"] for f in fires] == ["rivers", "why do they move?"]
    assert all(f.mode == "self_directing" and f.autonomous == str(decision.pk) for f in fires)
    # tagged autonomous in the lake and in the trace
    cards = Delta.objects.filter(workspace=workspace, tags__contains=["kind:card", "autonomous"])
    assert cards.count() == 2
    roots = TraceEvent.objects.filter(trace_id__in=[f.trace_id for f in fires], kind="trace.prompt.received")
    assert roots.count() == 2 and all(e.payload.get("autonomous") == str(decision.pk) for e in roots)


def test_offline_the_focus_is_the_deterministic_one_and_the_sit_runs(workspace, autonomy):
    deltas_create(workspace=workspace, items=[{"content": f"note about tides {i}"} for i in range(30)])
    decision = autonomous_sit_start(decision_id=claimed(workspace, autonomy).pk)
    assert decision.focus_source == "model" and decision.focus  # the offline provider answers set_focus
    assert session_tick(session_id=decision.session.pk) == "ended"
    fire = Fire.objects.get(session=decision.session)
    assert fire.work_set["messages"][0]["content"] == decision.focus and fire.status == "finished"


def test_the_cli_flips_the_switch(workspace, capsys):
    call_command("fathom", "autonomy", "set", "--workspace", workspace.slug, "on", "--threshold", "0.3",
                 "--quiet", "22:00-07:00")
    settings = autonomy_settings_get(workspace=workspace)
    assert (settings.mode, settings.threshold, str(settings.quiet_start)) == ("on", 0.3, "22:00:00")
    call_command("fathom", "autonomy", "show", "--workspace", workspace.slug)
    call_command("fathom", "autonomy", "sweep")
    call_command("fathom", "autonomy", "decisions", "--workspace", workspace.slug)
    out = capsys.readouterr().out
    assert "mode on; threshold 0.3" in out and '"since_sit"' in out


@pytest.mark.parametrize("args", [["--threshold", "3"], ["--quiet", "late"], ["--time-zone", "Nowhere/Land"]])
def test_the_cli_refuses_bad_settings(workspace, args):
    with pytest.raises(CommandError):
        call_command("fathom", "autonomy", "set", "--workspace", workspace.slug, *args)


def test_a_sit_that_names_a_directive_writes_it_for_the_inbox(workspace, autonomy, scripted_llm, api):
    decision = claimed(workspace, autonomy)
    scripted_llm.call_tool("set_focus", {"focus": "what next?"})
    decision = autonomous_sit_start(decision_id=decision.pk)
    scripted_llm.reply(tool_calls=[respond("I keep circling the tides", directive="Map the tide notes by month")])
    scripted_llm.call_tool("skip")
    session_tick(session_id=decision.session.pk)
    fire = Fire.objects.get(session=decision.session)
    directive = Delta.objects.get(workspace=workspace, tags__contains=["kind:directive"])
    assert directive.content == "Map the tide notes by month" and fire.writes["directive"] == directive.id
    assert f"fire:{fire.pk}" in directive.tags and "autonomous" in directive.tags
    assert api.get(f"/v1/fires/{fire.pk}").json()["autonomous"] == str(decision.pk)
    assert [f["autonomous"] for f in api.get("/v1/fires").json()["results"]] == [str(decision.pk)]
    assert [d["id"] for d in api.get("/v1/autonomy/directives").json()["results"]] == [directive.id]
    kinds = {i["kind"] for i in api.get("/v1/autonomy/inbox").json()["results"]}
    assert kinds == {"directive", "transcript"}
    assert api.get("/v1/autonomy/pressure").json()["now"]["breakdown"]["directives"]["raw"] == 1
