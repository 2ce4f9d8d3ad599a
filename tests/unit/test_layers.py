"""Architecture rules from DESIGN.md, checked on the source (AST), not by convention.

* Only ``pyctrl/kube`` imports the ``kubernetes`` package.
* ``pyctrl`` never imports ``cronjob_controller`` or ``examples``.
* ``cronjob_controller`` and ``examples`` use pyctrl's public API only: the package facades
  (``pyctrl``, ``pyctrl.<subpackage>``, ``pyctrl.<module>``) and never a module inside a
  subpackage such as ``pyctrl.cache.reflector``. ``pyctrl.testing`` is for tests only. The
  generated kinds' modules (``pyctrl.models.batch_v1``) are public: pyctrl.models documents
  them as the import path of each kind.
* ``examples`` import only the ``pyctrl`` facade itself (what a user would write).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_DEPTH = 2  # "pyctrl" or "pyctrl.<name>"


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


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


def _depth(mod: str) -> int:
    """How deep ``mod`` may be: one level more for a generated kinds' module."""
    return PUBLIC_DEPTH + 1 if mod.startswith("pyctrl.models.") else PUBLIC_DEPTH


def test_users_import_only_public_pyctrl_api() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{line} imports {mod}"
        for p in _files("cronjob_controller", "examples")
        for line, mod in _imports(p)
        if mod.split(".")[0] == "pyctrl"
        and (len(mod.split(".")) > _depth(mod) or mod.split(".")[1:2] == ["testing"]
             or any(part.startswith("_") for part in mod.split(".")))
    ]
    assert offenders == []


def test_examples_import_only_the_pyctrl_facade() -> None:
    """The examples show what a user writes: ``import pyctrl`` plus their own code."""
    offenders = [
        f"{p.relative_to(ROOT)}:{line} imports {mod}"
        for p in _files("examples")
        for line, mod in _imports(p)
        if (mod.split(".")[0] == "pyctrl" and mod != "pyctrl")
        or mod.split(".")[0] not in {"pyctrl", "examples", "__future__",
                                      *sys.stdlib_module_names}
    ]
    assert offenders == []  # neither pyctrl's internals nor its dependencies (structlog, ...)
