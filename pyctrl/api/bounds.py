"""Check a value against the bounds of a structural schema (what the API server's OpenAPI
validation checks, less CEL and formats).

Contract: :func:`violations` walks ``value`` with ``schema`` (as :mod:`pyctrl.api.schema`
builds it) and returns one message per violation, each naming its path
(``spec.routes[3].port: must be at most 65535``), at most ``limit`` of them: ``type``
(``integer`` excludes booleans, ``number`` takes integers; ``x-kubernetes-int-or-string``
either), ``nullable``, ``enum``, ``minimum``/``maximum`` (with ``exclusiveMinimum``/
``exclusiveMaximum``), ``minLength``/``maxLength`` (in characters), ``pattern``,
``minItems``/``maxItems``, ``minProperties``/``maxProperties``, ``required``, the unique keys
of an ``x-kubernetes-list-type`` ``map`` or ``set``, and the same below ``properties``,
``additionalProperties`` and ``items``. Unknown fields are not violations (the API server
prunes them); CEL rules (``x-kubernetes-validations``) and ``format`` are not checked. The
walk follows the schema, so its depth is the schema's, whatever the value's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["violations"]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,),
    "number": (int, float), "boolean": (bool,)}


def violations(value: Any, schema: Mapping[str, Any], path: str = "",
               limit: int = 10) -> list[str]:
    """The violations of ``schema``'s bounds by ``value`` (see module docstring)."""
    out: list[str] = []
    _check(value, schema, path or "<root>", out, limit)
    return out[:limit]


def _check(value: Any, schema: Mapping[str, Any], path: str, out: list[str],
           limit: int) -> None:
    if len(out) >= limit:
        return
    if value is None:
        if not schema.get("nullable") and "type" in schema:
            out.append(f"{path}: must not be null")
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            out.append(f"{path}: must be an integer or a string")
        return
    kind = schema.get("type")
    if isinstance(kind, str) and _wrong_type(value, kind):
        out.append(f"{path}: must be of type {kind}")
        return
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: must be one of {schema['enum']!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _number(value, schema, path, out)
    elif isinstance(value, str):
        _string(value, schema, path, out)
    elif isinstance(value, list):
        _array(value, schema, path, out, limit)
    elif isinstance(value, dict):
        _object(value, schema, path, out, limit)


def _wrong_type(value: Any, kind: str) -> bool:
    if kind not in _TYPES:
        return False
    return not isinstance(value, _TYPES[kind]) or (kind != "boolean" and isinstance(value, bool))


def _number(value: float, schema: Mapping[str, Any], path: str, out: list[str]) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and (value < low or (schema.get("exclusiveMinimum") and value == low)):
        out.append(f"{path}: must be at least {low}" + (
            " (exclusive)" if schema.get("exclusiveMinimum") else ""))
    if high is not None and (value > high or (schema.get("exclusiveMaximum") and value == high)):
        out.append(f"{path}: must be at most {high}" + (
            " (exclusive)" if schema.get("exclusiveMaximum") else ""))


def _string(value: str, schema: Mapping[str, Any], path: str, out: list[str]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        out.append(f"{path}: must be at least {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        out.append(f"{path}: must be at most {schema['maxLength']} characters")
    elif "pattern" in schema and not re.search(schema["pattern"], value):
        out.append(f"{path}: must match {schema['pattern']!r}")


def _array(value: list[Any], schema: Mapping[str, Any], path: str, out: list[str],
           limit: int) -> None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        out.append(f"{path}: must have at least {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        out.append(f"{path}: must have at most {schema['maxItems']} items")
        return  # its items are not worth walking
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _check(item, items, f"{path}[{i}]", out, limit)
    list_type = schema.get("x-kubernetes-list-type")
    if list_type in ("map", "set"):
        keys = schema.get("x-kubernetes-list-map-keys") or ()
        seen: set[str] = set()
        for i, item in enumerate(value):
            key = repr([item.get(k) for k in keys] if list_type == "map"
                       and isinstance(item, dict) else item)
            if key in seen:
                out.append(f"{path}[{i}]: duplicate entry in a list of type {list_type}")
            seen.add(key)


def _object(value: dict[str, Any], schema: Mapping[str, Any], path: str, out: list[str],
            limit: int) -> None:
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        out.append(f"{path}: must have at least {schema['minProperties']} properties")
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        out.append(f"{path}: must have at most {schema['maxProperties']} properties")
        return
    def below(name: str) -> str:
        return name if path == "<root>" else f"{path}.{name}"

    for name in schema.get("required", ()):
        if name not in value:
            out.append(f"{below(name)}: required")
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        node = props.get(name)
        if node is None and isinstance(extra, Mapping):
            node = extra
        if isinstance(node, Mapping):
            _check(item, node, below(name), out, limit)
