"""Loaded by pytest before Django (see pyproject's addopts): every test run gets its own data dir,
so its embedded PostgreSQL and Redis are its own and the user's data is never touched. Set
FATHOM_TEST_DATA_DIR to keep one between runs (faster start)."""

import os
import tempfile
from pathlib import Path

_kept = os.environ.get("FATHOM_TEST_DATA_DIR")
_data_dir = Path(_kept) if _kept else Path(tempfile.mkdtemp(prefix="fathom-test-"))
_data_dir.mkdir(parents=True, exist_ok=True)
os.environ["FATHOM_DATA_DIR"] = str(_data_dir)
# Tests (and the workers they start) embed with the deterministic embedder, never a paid provider.
os.environ["FATHOM_EMBEDDER"] = "hashing"
# The quality harness wraps only the fires of workspaces whose test turns it on (tests/harness/quality).
os.environ["FATHOM_QUALITY_DEFAULT_ENABLED"] = "false"


def pytest_unconfigure(config):
    if getattr(config, "workerinput", None) is not None:
        return
    from django.conf import settings

    if not settings.configured or not (settings.EMBEDDED_POSTGRES or settings.EMBEDDED_REDIS):
        return
    from fathom import embedded
    from fathom.shutdown import shutdown_run

    shutdown_run()  # what this process started (background threads) would find Redis gone
    embedded.stop_all(_data_dir)
    if not _kept:
        embedded.remove_data(_data_dir)
