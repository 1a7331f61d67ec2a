"""The dashboard's browser tests save a screenshot of each flow: under the test run's temporary
directory, or under $FATHOM_SCREENSHOTS when it is set (how README's docs/screenshots are made)."""

import os
from pathlib import Path

import pytest


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
