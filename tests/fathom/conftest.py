"""Fixtures of the platform's tests."""

import pytest

from tests.fathom.stack import stack_root
from tests.fathom.wire import WireServer


@pytest.fixture
def wire():
    """A local server speaking the model providers' wire protocols (see tests/fathom/wire.py)."""
    server = WireServer().start()
    yield server
    server.stop()


@pytest.fixture
def stack_dir():
    """A temp directory for a whole `fathom up` stack, its embedded servers stopped afterwards."""
    with stack_root() as path:
        yield path
