"""pyctrl.api.bounds: a value against a structural schema's bounds."""

from __future__ import annotations

from typing import Any

import pytest

from pyctrl.api.bounds import violations

SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["a"], "maxProperties": 5,
    "properties": {
        "a": {"type": "integer", "minimum": 0, "maximum": 3, "exclusiveMaximum": True},
        "s": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^x"},
        "n": {"type": "number", "nullable": True},
        "e": {"type": "string", "enum": ["p", "q"]},
        "i": {"x-kubernetes-int-or-string": True},
        "set": {"type": "array", "minItems": 1, "items": {"type": "string"},
                "x-kubernetes-list-type": "set"},
        "m": {"type": "object", "additionalProperties": {"type": "boolean"}},
    }}


@pytest.mark.parametrize(("value", "want"), [
    ({"a": 1}, []),
    ({}, ["a: required"]),
    ({"a": 3}, ["a: must be at most 3 (exclusive)"]),
    ({"a": -1}, ["a: must be at least 0"]),
    ({"a": 1.5}, ["a: must be of type integer"]),
    ({"a": 1, "s": "y"}, ["s: must be at least 2 characters", "s: must match '^x'"]),
    ({"a": 1, "s": "xxxxx"}, ["s: must be at most 4 characters"]),
    ({"a": 1, "n": None, "e": "p", "i": "50%"}, []),
    ({"a": None}, ["a: must not be null"]),
    ({"a": 1, "e": "r"}, ["e: must be one of ['p', 'q']"]),
    ({"a": 1, "i": 1.5}, ["i: must be an integer or a string"]),
    ({"a": 1, "set": []}, ["set: must have at least 1 items"]),
    ({"a": 1, "set": ["x", "x"]}, ["set[1]: duplicate entry in a list of type set"]),
    ({"a": 1, "m": {"k": 1}}, ["m.k: must be of type boolean"]),
    ({"a": 1, "unknown": {"deep": [1]}}, []),  # pruned by the API server, not refused
    ({"a": 1, "b": 1, "c": 1, "d": 1, "e": "p", "f": 1}, ["<root>: must have at most 5 "
                                                          "properties"]),
    ([1], ["<root>: must be of type object"]),
])
def test_violations(value: Any, want: list[str]) -> None:
    assert violations(value, SCHEMA) == want


def test_violations_are_bounded() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    assert len(violations(["x"] * 1000, schema, limit=3)) == 3
