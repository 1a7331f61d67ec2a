"""Stopping the embedded servers when something is in the way."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import redis

from fathom.embedded import EmbeddedRedis, _alive


@pytest.fixture
def data_dir():
    path = Path(tempfile.mkdtemp(prefix="fathom-embedded-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_a_redis_that_cannot_save_on_exit_is_still_stopped(data_dir):
    server = EmbeddedRedis(data_dir)
    server.ensure_running()
    pid = int((server.dir / "redis.pid").read_text())
    # Point its saves at a directory that then disappears: Redis refuses SIGTERM when its last save fails.
    gone = data_dir / "gone"
    gone.mkdir()
    client = redis.Redis(unix_socket_path=str(server.socket))
    client.config_set("dir", str(gone))
    client.set("k", "v")
    shutil.rmtree(gone)

    assert server.stop() is True

    assert not _alive(pid) or _is_zombie(pid)
    assert not (server.dir / "redis.pid").exists()


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return False


def test_stop_reports_nothing_running(data_dir):
    assert EmbeddedRedis(data_dir).stop() is False
    assert not os.listdir(data_dir)
