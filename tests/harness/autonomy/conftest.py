"""Autonomy fixtures: a workspace's settings with the switch where a test wants it."""

import pytest

from harness.autonomy.services import autonomy_settings_update


@pytest.fixture
def autonomy(workspace):
    """autonomy(**changes) -> the workspace's settings after the changes (mode, threshold, ...)."""

    def change(**changes):
        return autonomy_settings_update(workspace=workspace, **changes)

    return change
