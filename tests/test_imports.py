"""Imports go at the top of a module. A function-local import that dodges an import cycle means a
function lives in the wrong module (STYLE.md); the only ones allowed are listed here, each with its
reason."""

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

APPS = ("fathom", "lake", "festinger", "proposals", "harness")

# module -> why its function-local imports are there
ALLOWED = {
    "fathom/settings.py": "the embedded Redis is only loaded when REDIS_URL is unset",
    "fathom/embedded.py": "the embedded servers' packages load only when a server is started (settings import this)",
    "fathom/tracing/otel.py": "the OpenTelemetry SDK loads only when an exporter is configured",
    "fathom/testing/pytest_plugin.py": "pytest loads the plugin before Django is configured",
    "fathom/supervisor.py": "importable before Django's apps load (the data dir's lock comes first); models after",
    "fathom/apps.py": "AppConfig.ready: wiring once the app registry is ready",
    "festinger/apps.py": "AppConfig.ready: wiring once the app registry is ready",
    "proposals/apps.py": "AppConfig.ready: wiring once the app registry is ready",
    "lake/embedders.py": "optional packages of the embedders not in use (openai, sentence-transformers)",
    "festinger/wordscan.py": "the C extension is optional: its import is tried, the Python loops otherwise",
}


def function_local_imports() -> list[str]:
    found = []
    for app in APPS:
        for path in sorted((REPO_ROOT / app).rglob("*.py")):
            relative = path.relative_to(REPO_ROOT).as_posix()
            if "/migrations/" in relative or relative in ALLOWED:
                continue
            for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    found += [f"{relative}:{node.lineno}" for node in ast.walk(function)
                              if isinstance(node, ast.Import | ast.ImportFrom)]
    return found


def test_no_function_imports_outside_the_allowed_modules():
    assert function_local_imports() == []


def test_every_allowed_module_still_exists():
    assert [module for module in ALLOWED if not Path(REPO_ROOT, module).is_file()] == []
