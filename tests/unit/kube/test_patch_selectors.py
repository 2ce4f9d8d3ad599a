"""Merge/JSON patch and label/field selector semantics used by the fake client."""

from __future__ import annotations

from typing import Any

import pytest

from pyctrl.kube.patch import PatchError, json_patch, merge_patch
from pyctrl.kube.selectors import parse_field_selector, parse_label_selector


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


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("", {}, True),
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "db"}, False),
    ("app!=web", {}, True),
    ("app in (web, db),env", {"app": "db", "env": "x"}, True),
    ("app notin (web)", {"app": "web"}, False),
    ("!env", {"env": "x"}, False),
    ("env", {}, False),
])
def test_label_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(selector).matches(labels) is expected


@pytest.mark.parametrize("bad", ["app in web", "a b", "!a in (x)", "=x"])
def test_bad_label_selectors(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_label_selector(bad)


def test_field_selectors() -> None:
    obj = {"metadata": {"name": "a", "namespace": "n"}, "status": {"phase": "Running"},
           "spec": {"suspend": True}}
    assert parse_field_selector("metadata.name=a,status.phase!=Failed").matches(obj)
    assert not parse_field_selector("metadata.namespace==other").matches(obj)
    assert parse_field_selector("spec.suspend=true,spec.missing=").matches(obj)
    with pytest.raises(ValueError):
        parse_field_selector("nonsense")
