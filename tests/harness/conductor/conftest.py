"""Conductor fixtures: a driver that plays the broker in-process (the tasks a run enqueues, run in
the order a test chooses, some of them twice, as a redelivery would), and scripts per role."""

import random
import shutil

import pytest

from fathom.llm.scripted import Script
from harness.conductor import services
from harness.conductor.services import conductor_settings_get


class Driver:
    """Collects the tasks the services enqueue (conductor steps, capability calls) and runs them."""

    def __init__(self):
        self.pending: list[tuple[str, str]] = []
        self.ran: list[tuple[str, str]] = []

    def step(self, *, run_id):
        self.pending.append(("step", str(run_id)))

    def call(self, *, call_id):
        self.pending.append(("call", str(call_id)))

    def drain(self, *, rng: random.Random | None = None, redeliver: float = 0.0, limit: int = 500) -> int:
        """Run every pending task (new ones included) until none is left: first in, first out, or in
        `rng`'s order, running each again with probability `redeliver`."""
        count = 0
        while self.pending:
            assert count < limit, f"the run did not settle within {limit} tasks: {self.pending}"
            kind, ident = self.pending.pop(rng.randrange(len(self.pending)) if rng else 0)
            for _ in range(2 if rng and rng.random() < redeliver else 1):
                self.ran.append((kind, ident))
                if kind == "step":
                    services.run_step(run_id=ident)
                else:
                    services.capability_call_run(call_id=ident)
                count += 1
        return count


@pytest.fixture
def driver(monkeypatch):
    driver = Driver()
    monkeypatch.setattr(services, "step_enqueue", driver.step)
    monkeypatch.setattr(services, "call_enqueue", driver.call)
    return driver


@pytest.fixture
def conductor_script(workspace):
    """The scripted model answering the conductor role only (bootstrap and decisions)."""
    script = Script.install(workspace, roles=("conductor",))
    yield script
    script.reset()


@pytest.fixture
def main_script(workspace):
    """The scripted model answering the research fires (the main role) only."""
    script = Script.install(workspace, roles=("main",))
    yield script
    script.reset()


@pytest.fixture
def bwrap_installed():
    """Skips the test on a machine without bubblewrap (the terminal's sandbox); .ci/run installs it."""
    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap (bwrap), the terminal's sandbox: apt-get install bubblewrap")


@pytest.fixture
def terminal_limits(workspace, tmp_path, settings, bwrap_installed):
    """The workspace's conductor settings with the terminal on, its files under the test's tmp_path."""
    settings.FATHOM_FS_ROOT = tmp_path / "files"
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.terminal_enabled = True
    limits.save()
    return limits
