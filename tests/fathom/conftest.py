import pytest

from tests.fathom.stack import stack_root


@pytest.fixture
def stack_dir():
    """A temp directory for a whole `fathom up` stack, its embedded servers stopped afterwards."""
    with stack_root() as path:
        yield path
