"""Architecture rules from DESIGN.md, checked on the source (AST), not by convention.

* Only ``pyctrl/kube`` imports the ``kubernetes`` package.
* ``pyctrl`` never imports ``cronjob_controller`` or ``examples``.
* ``cronjob_controller`` and ``examples`` use pyctrl's public API only: the package facades
  (``pyctrl``, ``pyctrl.<subpackage>``, ``pyctrl.<module>``) and never a module inside a
  subpackage such as ``pyctrl.cache.reflector``. ``pyctrl.testing`` is for tests only.
* ``examples`` import only the ``pyctrl`` facade itself (what a user would write).
* No import cycle among pyctrl's modules, counting every import: module level,
  ``TYPE_CHECKING`` blocks and imports inside functions (a cycle held together by any of them
  is still a cycle). Importing a package's submodule (``from pyctrl.kube import meta``) is an
  edge to the submodule, not to the package's ``__init__``.
* One Manager builds controllers: ``pyctrl.manager`` (``pyctrl.Manager``) imports the
  builder; ``pyctrl.builder`` and ``pyctrl.rbac`` reach ``pyctrl.manager`` by no path (they
  see it through protocols: :class:`pyctrl.extension.ControllerHost`,
  :class:`pyctrl.rbac.RoleSource`).
* Packages are layered (:data:`LAYERS`, docs/DESIGN.md's picture): a unit (a subpackage such
  as ``pyctrl.kube``, or a top-level module such as ``pyctrl.clock``) imports only units of
  its own layer or of layers below, every unit is in exactly one layer, and no import cycle
  joins two units (a cycle through a package is an upward arrow even when no module cycle
  shows it).
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PUBLIC_DEPTH = 2  # "pyctrl" or "pyctrl.<name>"


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _graph() -> dict[str, set[str]]:
    """pyctrl's modules -> the pyctrl modules each imports (every import; module docstring)."""
    paths = {_module(p): p for p in _files("pyctrl")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in paths)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                subs = {f"{base}.{a.name}" for a in node.names} & paths.keys()
                edges.update(subs)
                if base in paths and len(subs) < len(node.names):
                    edges.add(base)
        graph[name] = edges - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# The frontend's Conn and Frontend call each other; pyctrl/frontend/ is being reworked on
# another branch (issue 36 item 1: a small protocol for the connection). Empty this then.
KNOWN_CYCLES: list[list[str]] = []


def test_no_import_cycle_among_pyctrl_modules() -> None:
    new = [c for c in _cycles(_graph()) if c not in KNOWN_CYCLES]
    assert new == []


def test_the_cycle_finder_finds_cycles() -> None:
    graph: dict[str, set[str]] = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


#: docs/DESIGN.md's layers, bottom first: a unit imports its own layer or those below.
LAYERS: list[tuple[str, frozenset[str]]] = [
    ("base", frozenset({"clock", "errors", "collectors", "duration", "log", "retry",
                        "_version", "_gctune", "_signals", "_errorlog"})),
    ("client", frozenset({"kube", "availability", "frontend"})),
    ("serving", frozenset({"serving", "webhook"})),
    ("types", frozenset({"api", "models"})),
    ("cache", frozenset({"cache", "workqueue", "reconcile", "leaderelection", "record"})),
    ("helpers", frozenset({"apply", "finalizers", "ownerrefs", "conditions", "handlers"})),
    ("runtime", frozenset({"controller", "_runnables", "_leadership", "_manager_options",
                           "extension", "sharding"})),
    ("assembly", frozenset({"rbac", "builder", "_wiring", "manager"})),
    ("entry", frozenset({"pyctrl", "testing", "cli", "__main__"})),
]
# None left: the one Lister protocol removed api.typed -> cache.lister (issue 41 item 2).
KNOWN_UPWARD: set[tuple[str, str]] = set()


def _unit(module: str) -> str:
    """``pyctrl.kube.meta`` -> ``kube``; ``pyctrl.clock`` -> ``clock``; ``pyctrl`` -> itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for module, imported in graph.items():
        edges = units.setdefault(_unit(module), set())
        edges.update(_unit(m) for m in imported)
    return {u: edges - {u} for u, edges in units.items()}


def _upward(units: dict[str, set[str]]) -> list[str]:
    layer = {u: i for i, (_, members) in enumerate(LAYERS) for u in members}
    return sorted(f"{a} ({LAYERS[layer[a]][0]}) imports {b} ({LAYERS[layer[b]][0]})"
                  for a, edges in units.items() for b in edges
                  if layer[b] > layer[a] and (a, b) not in KNOWN_UPWARD)


def test_every_unit_is_in_one_layer() -> None:
    listed = [u for _, members in LAYERS for u in members]
    assert len(listed) == len(set(listed))
    assert set(_unit_graph(_graph())) == set(listed)


def test_no_package_imports_a_layer_above_it() -> None:
    assert _upward(_unit_graph(_graph())) == []


def test_no_import_cycle_among_packages() -> None:
    known = [sorted(pair) for pair in KNOWN_UPWARD]
    assert [c for c in _cycles(_unit_graph(_graph())) if c not in known] == []


def test_the_package_checks_see_an_upward_arrow_and_a_package_cycle() -> None:
    # kube.metrics -> serving.metrics and serving.auth -> kube.interface: no module cycle,
    # a package cycle and an upward arrow (the one this test suite once missed).
    graph = {"pyctrl.kube.metrics": {"pyctrl.serving.metrics"}, "pyctrl.serving.metrics": set(),
             "pyctrl.serving.auth": {"pyctrl.kube.interface"}, "pyctrl.kube.interface": set()}
    assert _cycles(graph) == []
    units = _unit_graph(graph)
    assert _cycles(units) == [["kube", "serving"]]
    assert _upward(units) == ["kube (client) imports serving (serving)"]


def test_the_builder_and_rbac_never_reach_the_manager() -> None:
    graph = _graph()
    for start in ("pyctrl.builder", "pyctrl.rbac"):
        reached: set[str] = set()
        todo = [start]
        while todo:
            for w in graph[todo.pop()] - reached:
                reached.add(w)
                todo.append(w)
        assert "pyctrl.manager" not in reached, start
    assert "pyctrl.builder" in graph["pyctrl.manager"]  # one Manager builds controllers


def _files(*dirs: str) -> list[Path]:
    return [p for d in dirs for p in sorted((ROOT / d).rglob("*.py"))]


def test_only_pyctrl_kube_imports_kubernetes() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{line} imports {mod}"
        for p in _files("pyctrl", "cronjob_controller", "examples")
        for line, mod in _imports(p)
        if (mod == "kubernetes" or mod.startswith("kubernetes."))
        and not p.is_relative_to(ROOT / "pyctrl" / "kube")
    ]
    assert offenders == []


def test_pyctrl_does_not_import_its_users() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{line} imports {mod}"
        for p in _files("pyctrl")
        for line, mod in _imports(p)
        if mod.split(".")[0] in ("cronjob_controller", "examples", "tests", "bench")
    ]
    assert offenders == []


def test_users_import_only_public_pyctrl_api() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{line} imports {mod}"
        for p in _files("cronjob_controller", "examples")
        for line, mod in _imports(p)
        if mod.split(".")[0] == "pyctrl" and not _is_model_module(mod)
        and (len(mod.split(".")) > PUBLIC_DEPTH or mod.split(".")[1:2] == ["testing"]
             or any(part.startswith("_") for part in mod.split(".")))
    ]
    assert offenders == []


def _is_model_module(mod: str) -> bool:
    """``pyctrl.models.<group>_<version>``: the typed built-in kinds, public one module per
    group version (as k8s.io/api/core/v1 is)."""
    parts = mod.split(".")
    return parts[:2] == ["pyctrl", "models"] and len(parts) == 3 and not parts[2].startswith("_")


def test_examples_import_only_the_pyctrl_facade() -> None:
    """The examples show what a user writes: ``import pyctrl`` (with ``pyctrl.api`` for their
    own kinds and ``pyctrl.models`` for the built-in ones) plus their own code."""
    offenders = [
        f"{p.relative_to(ROOT)}:{line} imports {mod}"
        for p in _files("examples")
        for line, mod in _imports(p)
        if (mod.split(".")[0] == "pyctrl" and mod not in ("pyctrl", "pyctrl.api")
            and not _is_model_module(mod))
        or mod.split(".")[0] not in {"pyctrl", "examples", "__future__",
                                      *sys.stdlib_module_names}
    ]
    assert offenders == []  # neither pyctrl's internals nor its dependencies (structlog, ...)
