"""Which module may import which. Dependencies point one way, down the layers below (an upward import
fails, wherever it sits: at module level, in a function, under TYPE_CHECKING); no two parts of one app
import each other; and imports go at the top of a module. A function-local import that dodges an import
cycle means a function lives in the wrong module (STYLE.md); the only ones allowed are listed here, each
with its reason."""

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

APPS = ("fathom", "lake", "festinger", "proposals", "harness", "dashboard", "mcp_server")

# The layers, lowest first (docs/architecture.md): an app imports its own modules and the layers below it.
# Apps that share a layer are peers and import neither each other nor anything above.
LAYERS = (
    ("fathom",),
    ("lake",),
    ("festinger",),
    ("proposals",),
    ("harness",),  # the package itself: its historical migrations' app, importing nothing
    ("harness.runtime",),
    ("harness.fires",),
    ("harness.quality", "harness.conductor", "harness.autonomy"),
    ("dashboard", "mcp_server"),  # the operator's pages and the MCP server: peers over every app
)
LAYER = {app: rank for rank, apps in enumerate(LAYERS) for app in apps}

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
    "lake/apps.py": "AppConfig.ready: wiring once the app registry is ready",
    "lake/embedders.py": "the openai SDK loads only when that embedder is in use",
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


def test_no_app_imports_upward():
    assert upward_imports(import_edges()) == []


def test_no_two_parts_of_an_app_import_each_other():
    assert two_way_parts(import_edges()) == []


def test_the_checks_catch_an_upward_import_a_peer_import_and_a_two_way_pair():
    assert upward_imports([
        ("harness.fires.loop", "harness.quality.flow"),  # fires importing the quality app
        ("lake.search", "proposals.models"),
        ("harness.runtime.services", "dashboard.views"),
        ("harness.conductor.services", "harness.autonomy.selectors"),  # peers
        ("dashboard.views", "harness.quality.selectors"),  # downward: fine
        ("harness.quality.flow", "harness.quality.events"),  # inside one app: fine
    ]) == ["harness.fires.loop -> harness.quality.flow", "lake.search -> proposals.models",
                       "harness.runtime.services -> dashboard.views",
                       "harness.conductor.services -> harness.autonomy.selectors"]
    assert two_way_parts([("harness.quality.flow", "harness.quality.events"),
                          ("harness.quality.events", "harness.quality.flow.parts"),
                          ("harness.autonomy.services", "harness.autonomy.producers.services")]) == [
        "harness.quality.events <-> harness.quality.flow"]


def import_edges() -> list[tuple[str, str]]:
    """(importer, imported) for every import of one of the project's modules, wherever it sits: at
    module level, in a function, under TYPE_CHECKING."""
    modules = dict(_modules())
    return [(name, target) for name, (_, tree) in modules.items() for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom) for target in _imported(node, name, modules)]


def upward_imports(edges) -> list[str]:
    """The imports of an app above the importer's, or of a peer in its layer."""
    found = []
    for importer, imported in edges:
        source, target = app_of(importer), app_of(imported)
        if source != target and LAYER[target] >= LAYER[source]:
            found.append(f"{importer} -> {imported}")
    return found


def two_way_parts(edges) -> list[str]:
    """The pairs of parts of one app (its sub-packages and top-level modules) that import each other."""
    pairs = set()
    for importer, imported in edges:
        app = app_of(importer)
        if app == app_of(imported) and (a := _part(importer, app)) != (b := _part(imported, app)):
            pairs.add((a, b))
    return sorted(f"{a} <-> {b}" for a, b in pairs if a < b and (b, a) in pairs)


def app_of(module: str) -> str:
    """The app in LAYERS a module belongs to (the longest name it starts with)."""
    return max((app for app in LAYER if module == app or module.startswith(app + ".")), key=len)


def _part(module: str, app: str) -> str:
    return ".".join(module.split(".")[:len(app.split(".")) + 1])


def test_no_import_cycle_among_the_projects_modules():
    """Two modules that import each other at load time work only in one order (a cycle is what the
    function-local imports above used to dodge, or what an import at the bottom of a file hides)."""
    modules = dict(_modules())
    graph = {name: {target for node in _load_time_imports(tree) for target in _imported(node, name, modules)
                    if target != name}
             for name, (_, tree) in modules.items()}
    cycles = _cycles(graph)
    assert not cycles, "modules importing each other at load time:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _modules() -> list[tuple[str, tuple[bool, ast.Module]]]:
    found = []
    for app in APPS:
        for path in sorted((REPO_ROOT / app).rglob("*.py")):
            relative = path.relative_to(REPO_ROOT)
            if "migrations" in relative.parts:
                continue
            parts = list(relative.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found.append((".".join(parts), (is_package, ast.parse(path.read_text(encoding="utf-8")))))
    return found


def _load_time_imports(tree: ast.Module):
    """Imports that run when the module is imported: at module level, in if/try/with blocks and class
    bodies, not in functions nor under `if TYPE_CHECKING:`."""
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            pending += node.body + node.orelse
        elif isinstance(node, ast.Try):
            pending += node.body + node.orelse + node.finalbody + [n for h in node.handlers for n in h.body]
        elif isinstance(node, ast.With | ast.ClassDef):
            pending += node.body


def _imported(node: ast.Import | ast.ImportFrom, module: str, modules: dict) -> list[str]:
    """The project's modules an import statement loads. `from package import submodule` loads the
    package too, unless the package is the importer's own ancestor (loaded first anyway)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in modules]
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if modules[module][0] else module.split(".")[:-1]
        base = ".".join(anchor[:len(anchor) - (node.level - 1)] + ([base] if base else []))
    submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
    if submodules and (module + ".").startswith(base + "."):
        return submodules
    return [name for name in (base, *submodules) if name in modules]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                on_stack.discard(member)
                component.append(member)
            on_stack.discard(node)
            component.append(node)
            if len(component) > 1:
                components.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return components
