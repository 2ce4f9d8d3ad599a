"""The examples are typed end to end (issue 32): no ``Any`` anywhere in examples/, no dict
standing in for an object in an annotation (``dict[str, X]`` other than a ``str`` to ``str``
map such as labels), and no raw-dict ``Object`` alias imported from pyctrl."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SOURCES = sorted(EXAMPLES.rglob("*.py"))


def untyped(source: str) -> list[str]:
    """What in ``source`` is not typed: ``Any`` (anywhere: text, import or annotation), a
    ``dict[str, X]`` annotation with ``X`` not ``str``, an import of the transport's
    ``RawObject`` (``pyctrl.Object``, the typed protocol, is fine)."""
    found = [f"line {n}: Any" for n, line in enumerate(source.splitlines(), 1)
             if "Any" in line.replace("Any", " Any ").split()]
    tree = ast.parse(source)
    annotations: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            annotations.append(node.returns)
        elif (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyctrl")
              and any(alias.name == "RawObject" for alias in node.names)):
            found.append(f"line {node.lineno}: RawObject from {node.module}")
    for annotation in annotations:
        for sub in ast.walk(annotation):
            if (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name)
                    and sub.value.id == "dict" and isinstance(sub.slice, ast.Tuple)
                    and [ast.unparse(e) for e in sub.slice.elts] != ["str", "str"]):
                found.append(f"line {sub.lineno}: {ast.unparse(sub)}")
    return found


def test_the_examples_are_found() -> None:
    names = {p.relative_to(EXAMPLES).as_posix() for p in SOURCES}
    assert {"website/controller.py", "sample_controller/controller.py",
            "configmap_mirror/__init__.py"} <= names


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_no_any_and_no_dict_objects(path: Path) -> None:
    assert untyped(path.read_text()) == []


def test_the_check_finds_what_the_dict_examples_had() -> None:
    before = '''
from typing import Any
from pyctrl.kube import RawObject
def new_deployment(foo: RawObject) -> RawObject: ...
def reconcile(request: Request) -> None:
    spec: dict[str, Any] = {}
labels: dict[str, str] = {}
'''
    assert untyped(before) == ["line 2: Any", "line 6: Any", "line 3: RawObject from pyctrl.kube",
                               "line 6: dict[str, Any]"]
