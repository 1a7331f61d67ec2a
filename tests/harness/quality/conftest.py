"""Fixtures of the quality harness's tests: the harness switched on for the test's workspace, one
scripted model per role, so each role's calls are counted apart, and a real model's wire for the main
role; and their helpers: the scripted models' answers, a question asked, the quality worker's part
played in-process, the harness's events."""

import json
import uuid

import pytest

from fathom.llm.scripted import Script
from fathom.llm.services import model_assign, model_create
from harness.quality import verification
from harness.quality.configuration import quality_settings_get
from harness.quality.models import QualityRun
from harness.runtime.models import SessionEvent
from harness.runtime.services import message_send
from tests.fathom.wire import WireServer
from tests.harness.support import session_tick

ANSWER = "Paris is the capital of France, and has been for most of the last thousand years."
RECOMMENDATION = "Visit Paris first: it is the capital of France, the hub of its railways, and the easiest start to a tour."
RECOMMENDATION_CARD = {"kind": "recommendation", "body": "Visit Paris first."}
RECOMMENDATION_PLANS = json.dumps({"plans": [{
    "description": "Recommend from what is known", "prompt_modifier": "", "subtasks": [], "estimated_turns": 1,
    "suggested_workflow": "recommendation"}]})


@pytest.fixture
def quality_on(workspace):
    settings = quality_settings_get(workspace_id=workspace.pk)
    settings.enabled = True
    settings.save(update_fields=["enabled"])
    return settings


class Roles:
    """A script per role: roles.main.reply(...), roles.calls() -> {role: count}."""

    NAMES = ("main", "classifier", "planner", "verifier", "specialist", "aggregator")

    def __init__(self, workspace):
        self.scripts = {role: Script.install(workspace, roles=(role,)) for role in self.NAMES}

    def __getattr__(self, role):
        try:
            return self.__dict__["scripts"][role]
        except KeyError:
            raise AttributeError(role) from None

    def calls(self) -> dict:
        return {role: len(script.sent) for role, script in self.scripts.items() if script.sent}

    def reset(self):
        for script in self.scripts.values():
            script.reset()


@pytest.fixture
def roles(workspace, quality_on):
    scripted = Roles(workspace)
    yield scripted
    scripted.reset()


def classification(level="SIMPLE", workflow="chat", **expected) -> str:
    return json.dumps({"level": level, "reason": f"a {level} {workflow} question", "subtask_count": 1,
                       "workflow_type": workflow, "expected": expected})


def verdict(score=0.9, passed=True, issues=(), feedback="fine") -> str:
    return json.dumps({"passed": passed, "score": score, "issues": list(issues), "feedback": feedback})


def respond(body=ANSWER, **extra):
    return {"name": "respond", "arguments": {"body": body, **extra}}


def simple_chat_asked(session, roles, *, quality: bool = True, search: str = "") -> None:
    """`session` asked a SIMPLE chat question, its answers queued: the classifier's and the verifier's
    when the harness is on, a search for `search` when given, then the main model's respond and skip."""
    message_send(session=session, content="What is the capital of France?")
    if quality:
        roles.classifier.reply(classification("SIMPLE", "chat"))
        roles.verifier.reply(verdict(0.9))
    if search:
        roles.main.call_tool("semantic", {"query": search})
    roles.main.reply(tool_calls=[respond()])
    roles.main.call_tool("skip", {"reason": "-"})


def recommendation_asked(session, roles) -> None:
    """`session` asked a COMPLEX recommendation question, whose verifiers are contrastive (three, on the
    quality worker: the fire parks for them), its answers queued: the classifier's, the planner's, three
    passing verdicts, then the main model's respond (a recommendation card) and skip."""
    message_send(session=session, content="Which city should I visit first in France, and why?")
    roles.classifier.reply(classification("COMPLEX", "recommendation"))
    roles.planner.reply(RECOMMENDATION_PLANS)
    for _ in range(3):
        roles.verifier.reply(verdict(0.9))
    roles.main.reply(tool_calls=[respond(RECOMMENDATION, cards=[RECOMMENDATION_CARD])])
    roles.main.call_tool("skip", {"reason": "-"})


def verify_all(run: QualityRun) -> None:
    """What the quality worker does for the run's waiting contrastive group: each verifier, then the
    chord's join."""
    run.refresh_from_db()
    perspectives = verification.perspectives_for(run)
    assert perspectives != ("standard",), "the lone verifier is called in the fire's own run"
    brief = verification.verifier_brief(run.fire, run.attempts.get(number=run.attempt).response)  # as their messages carry it
    for perspective in perspectives:
        verification.verification_run(run_id=run.pk, attempt=run.attempt, perspective=perspective, brief=brief)
    assert verification.verification_join(run_id=run.pk, attempt=run.attempt, token=run.waiting_token)


def ticked_to_its_end(session, *, parks: int = 0) -> QualityRun:
    """`session` ticked until its fire ends, parking `parks` times for a contrastive verifier group
    (each time its verifiers answered as the quality worker answers them; a lone verifier is called in
    the fire's own run); the fire's run."""
    for _ in range(parks):
        assert session_tick(session_id=session.pk) == "parked"
        verify_all(QualityRun.objects.get(fire__session=session))
    assert session_tick(session_id=session.pk) == "ended"
    return QualityRun.objects.get(fire__session=session)


def harness_events(session) -> list[str]:
    return [kind for kind in SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True)
            if kind.startswith("harness_") or kind in ("context_metrics", "milestone_unlocked")]


@pytest.fixture
def wire_main(workspace, roles):
    """The main role answered by a local OpenAI-wire server (the real SDK); the other roles scripted."""
    server = WireServer().start()
    row = model_create(workspace=workspace, name=f"wire-{uuid.uuid4().hex[:8]}", provider="openai-compatible",
                       model="wire-model", base_url=f"{server.url}/v1", api_key="sk-local")
    model_assign(workspace=workspace, role="main", model=row)
    yield server
    server.stop()
