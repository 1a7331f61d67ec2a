"""Fixtures of the platform's tests."""

import pytest

from tests.fathom.wire import WireServer


@pytest.fixture
def wire():
    """A local server speaking the model providers' wire protocols (see tests/fathom/wire.py)."""
    server = WireServer().start()
    yield server
    server.stop()
