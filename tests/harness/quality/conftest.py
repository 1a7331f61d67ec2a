"""Fixtures of the quality harness's tests: the harness switched on for the test's workspace, one
scripted model per role, so each role's calls are counted apart, and a real model's wire for the main
role."""

import json
import uuid

import pytest

from fathom.llm.scripted import Script
from fathom.llm.services import model_assign, model_create
from harness.quality.configuration import quality_settings_get
from tests.fathom.wire import WireServer


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


@pytest.fixture
def wire_main(workspace, roles):
    """The main role answered by a local OpenAI-wire server (the real SDK); the other roles scripted."""
    server = WireServer().start()
    row = model_create(workspace=workspace, name=f"wire-{uuid.uuid4().hex[:8]}", provider="openai-compatible",
                       model="wire-model", base_url=f"{server.url}/v1", api_key="sk-local")
    model_assign(workspace=workspace, role="main", model=row)
    yield server
    server.stop()
