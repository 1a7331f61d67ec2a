"""Harness fixtures: sessions, worker processes a test starts (and kills) itself, a local wire-protocol
model server."""

import uuid

import pytest

from harness.runtime.services import session_create
from tests.conftest import start_worker, stop_worker, wait_for_worker
from tests.fathom.wire import WireServer

ALL_QUEUES = ["fires", "quality", "memory", "maintenance"]


@pytest.fixture
def session(workspace):
    return session_create(workspace=workspace, title="test session")


@pytest.fixture
def model(workspace):
    """The workspace's main role answered by a local OpenAI-wire server (other roles: offline)."""
    from fathom.llm.services import model_assign, model_create

    server = WireServer().start()
    row = model_create(workspace=workspace, name=f"wire-{uuid.uuid4().hex[:8]}", provider="openai-compatible", model="wire-model",
                       base_url=f"{server.url}/v1", api_key="sk-local")
    model_assign(workspace=workspace, role="main", model=row)
    yield server
    server.stop()


@pytest.fixture
def workers():
    """start(queues, env) -> a new real worker process (concurrency 1), with `env` added to its
    environment, stopped after the test."""
    started = []

    def start(queues=ALL_QUEUES, env=None):
        name = f"w-{uuid.uuid4().hex[:6]}"
        process = start_worker(name, queues=queues, env=env)
        started.append(process)
        wait_for_worker(name)
        return process

    yield start
    for process in started:
        stop_worker(process)
