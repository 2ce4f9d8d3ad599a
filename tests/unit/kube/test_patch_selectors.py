"""Merge/JSON patch semantics used by the fake client (selectors: test_selectors.py)."""

from __future__ import annotations

from typing import Any

import pytest

from pyctrl.kube.patch import PatchError, json_patch, merge_patch


def test_merge_patch_rfc7386_examples() -> None:
    target: dict[str, Any] = {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    out = merge_patch(target, {"a": "z", "c": {"f": None}, "l": [3]})
    assert out == {"a": "z", "c": {"d": "e"}, "l": [3]}
    assert target == {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    assert merge_patch({"a": 1}, ["x"]) == ["x"]


def test_json_patch_operations() -> None:
    doc: dict[str, Any] = {"a": {"b": [1, 2]}, "k/x": 1}
    out = json_patch(doc, [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "add", "path": "/a/b/0", "value": 0},
        {"op": "remove", "path": "/k~1x"},
        {"op": "copy", "from": "/a/b", "path": "/c"},
        {"op": "move", "from": "/c", "path": "/d"},
        {"op": "replace", "path": "/a/b/1", "value": 9},
        {"op": "test", "path": "/d/3", "value": 3},
    ])
    assert out == {"a": {"b": [0, 9, 2, 3]}, "d": [0, 1, 2, 3]}
    assert doc == {"a": {"b": [1, 2]}, "k/x": 1}


@pytest.mark.parametrize("ops", [
    [{"op": "remove", "path": "/missing"}],
    [{"op": "replace", "path": "/a/5", "value": 1}],
    [{"op": "test", "path": "/a/0", "value": 2}],
    [{"op": "frob", "path": "/a"}],
    [{"op": "add", "path": "a", "value": 1}],
])
def test_json_patch_errors(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(PatchError):
        json_patch({"a": [1]}, ops)
