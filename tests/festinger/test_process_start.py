"""Festinger's background work starts where a process starts using it, never at import: importing
every festinger module starts no thread and registers no exit handler or Celery signal; the first world
a process reads starts the background thread and registers the push of its counts at exit, and
fathom.shutdown runs it (fathom itself imports nothing from festinger)."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from festinger.services import world_ensure
from tests.conftest import REPO_ROOT, worker_env

# Records who starts a thread, registers an exit handler or connects a Celery signal, by the module of
# the caller; then sets Django up, imports every festinger module, and reads a world.
PROCESS = """
import atexit, importlib, json, os, pkgutil, sys, threading
from celery.utils.dispatch import Signal

calls = []

def recorded(kind, original):
    def record(*args, **kwargs):
        calls.append([kind, sys._getframe(1).f_globals.get("__name__", "")])
        return original(*args, **kwargs)
    return record

atexit.register = recorded("atexit", atexit.register)
Signal.connect = recorded("signal", Signal.connect)
threading.Thread.start = recorded("thread", threading.Thread.start)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fathom.settings")
import django
django.setup()
import festinger
for module in pkgutil.walk_packages(festinger.__path__, "festinger."):
    importlib.import_module(module.name)
at_import, calls[:] = list(calls), []

from festinger import cache
cache.world(int(sys.argv[1]))
cache.world(int(sys.argv[1]))
at_first_world, calls[:] = list(calls), []

from fathom.shutdown import shutdown_run
shutdown_run()
background = [t for t in threading.enumerate() if t.name == "festinger-background"]
for thread in background:
    thread.join(timeout=30)
print(json.dumps({"at_import": at_import, "at_first_world": at_first_world, "background": len(background),
                  "stopped": not any(t.is_alive() for t in background)}))
"""


@pytest.mark.django_db(transaction=True)
def test_importing_festinger_starts_nothing_and_the_first_world_starts_the_background_work(workspace):
    world_ensure(workspace=workspace)
    ran = subprocess.run([sys.executable, "-c", PROCESS, str(workspace.pk)], cwd=REPO_ROOT, env=worker_env(),
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout.strip().splitlines()[-1])

    assert [call for call in seen["at_import"] if call[1].startswith("festinger")] == []
    # (the first query also starts the database pool's own threads: psycopg_pool's, not ours)
    ours = [call for call in seen["at_first_world"] if call[1].startswith(("festinger", "fathom"))]
    assert sorted(ours) == [
        ["atexit", "fathom.shutdown"], ["signal", "fathom.shutdown"], ["thread", "festinger.cache.background"]]
    assert seen["background"] == 1
    assert seen["stopped"]


def test_fathom_imports_nothing_from_festinger():
    importers = []
    for path in Path(REPO_ROOT, "fathom").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            if any(name == "festinger" or name.startswith("festinger.") for name in names):
                importers.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert importers == []
