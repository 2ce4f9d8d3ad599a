"""The serving layer lives in pyctrl.serving alone (the module paths of earlier drafts are
gone); envtest's modules do not import each other in a cycle."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import pyctrl.serving

ROOT = Path(__file__).resolve().parents[3]

GONE = ["pyctrl.healthz", "pyctrl.metrics", "pyctrl.metrics_auth", "pyctrl.gcmetrics",
        "pyctrl.webhook.certs"]


@pytest.mark.parametrize("old", GONE)
def test_the_old_module_paths_are_gone(old: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    assert hasattr(pyctrl.serving, "Checks") and hasattr(pyctrl.serving, "generate_certs")


def _pyctrl_imports(path: Path) -> set[str]:
    """Every pyctrl module ``path`` imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pyctrl"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pyctrl"))
    return found


@pytest.mark.parametrize("package", ["pyctrl/testing/envtest", "pyctrl/serving"])
def test_modules_of_a_package_import_each_other_without_cycles(package: str) -> None:
    files = {p: ".".join(p.relative_to(ROOT).with_suffix("").parts)
             for p in (ROOT / package).glob("*.py") if p.name != "__init__.py"}
    graph = {mod: {m for m in _pyctrl_imports(p) if m in files.values()}
             for p, mod in files.items()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert [mod for mod in graph if reaches(mod, mod, {mod})] == []
