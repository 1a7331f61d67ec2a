"""The dashboard's browser tests save a screenshot of each flow: under the test run's temporary
directory, or under $FATHOM_SCREENSHOTS when it is set (how docs/screenshots (docs/dashboard.md) are made). The
Festinger panels' tests borrow the proxy's fixtures (the proxy in front of a fake Ollama)."""

import os
from pathlib import Path

import pytest

from festinger import cache
from tests.dashboard.support import known_concept
from tests.festinger.conftest import fake_ollama, proxy  # noqa: F401


@pytest.fixture
def festinger_knows():
    """festinger_knows(workspace): its world knows gnommoweb (support.known_concept), forgotten after."""
    known = []

    def know(workspace):
        known.append(workspace.pk)
        known_concept(workspace)

    yield know
    for workspace_id in known:
        cache.forget(workspace_id)


@pytest.fixture
def screenshot(browser, tmp_path_factory):
    """screenshot(name) -> the PNG of the browser's window, saved as <name>.png."""
    folder = Path(os.environ.get("FATHOM_SCREENSHOTS") or tmp_path_factory.getbasetemp() / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)

    def save(name: str) -> Path:
        path = folder / f"{name}.png"
        browser.save_screenshot(str(path))
        return path

    return save
