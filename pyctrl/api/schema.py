"""Python types -> structural OpenAPI v3 schemas (the ``openAPIV3Schema`` of a CRD version).

Contract (``T`` is a field's type, markers are :mod:`pyctrl.api.markers`):

* ``str`` -> string, ``bool`` -> boolean, ``int`` -> integer, ``float`` -> number,
  ``datetime`` -> string/date-time, ``date`` -> string/date, ``bytes`` -> string/byte;
  ``Literal[...]`` and ``enum.Enum`` subclasses -> ``enum`` (all members one JSON type);
  ``list[T]`` -> array; ``dict[str, T]`` -> object with ``additionalProperties``;
  ``dict[str, Any]`` and ``Any`` -> ``x-kubernetes-preserve-unknown-fields``;
  a :class:`~pyctrl.api.types.Struct` -> object with ``properties`` under the JSON names and
  ``required`` = the fields without a default; ``T | None`` -> T, optional.
* Markers in ``Annotated`` add their keyword; a plain string is the description. A field's
  default is published as ``default`` when it is a plain scalar other than ``""`` (an
  empty string, like None or an empty container, means "absent"), or given by ``Default``.
* An :class:`~pyctrl.api.markers.Embedded` field is the inlined structural schema of a
  Kubernetes type from :func:`pyctrl.api.openapi.snapshot` (or the document passed in).
* CEL cost bounds: every :class:`~pyctrl.api.markers.Rule` is checked when the whole schema
  is built. Its ``self``, and the node at every ``self.a.b``/``oldSelf.a.b`` path its text
  names, must be bounded if it is a string (``maxLength``, ``enum`` or a fixed-size format),
  a list (``maxItems``) or a map (``maxProperties``); a path the rule iterates with a macro
  (``.all(``, ``.exists(``, ``.map(``, ...) must be bounded all the way down. A rule over an
  unbounded value, or naming a path the schema lacks, raises :class:`SchemaError` naming it.
  (``metadata.name``/``generateName`` count as bounded: the apiserver caps them.)
* Anything this module cannot express structurally (a union of two types, a non-string map
  key, a recursive struct) raises :class:`SchemaError` with the field's path.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from pyctrl.api import markers as m
from pyctrl.api.openapi import GenerateError, embedded_schema, ordered, snapshot
from pyctrl.api.types import INT32_RANGE, INT64_RANGE

__all__ = ["SchemaError", "check_rule_costs", "object_schema", "type_schema"]

Schema = dict[str, Any]

_FIXED_SIZE_FORMATS = ("date-time", "date", "duration", "int32", "int64", "uuid")
_MACROS = ("all", "exists", "exists_one", "map", "filter")


class SchemaError(ValueError):
    """A type or marker ``gen crd`` cannot turn into a valid structural schema."""


def _split_annotated(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        return base, tuple(meta)
    return tp, ()


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(tp)
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return rest[0], True
        return tp, False
    return tp, False


def _json_type(values: tuple[Any, ...], where: str) -> str:
    kinds = {type(v) for v in values}
    if kinds <= {str}:
        return "string"
    if kinds <= {int}:
        return "integer"
    raise SchemaError(f"{where}: enum values must all be strings or all integers: {values}")


def _scalar_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bool | int | float) or (isinstance(value, str) and value):
        return value
    return None  # None, "" and containers mean "absent": not published


class _Builder:
    def __init__(self, openapi: Mapping[str, Any] | None) -> None:
        self.openapi = openapi
        self._stack: list[type] = []

    def type_schema(self, tp: Any, where: str) -> Schema:
        tp, meta = _split_annotated(tp)
        tp, _ = _strip_optional(tp)
        tp, more = _split_annotated(tp)  # Optional[Annotated[...]]
        meta = more + meta
        embedded = [x for x in meta if isinstance(x, m.Embedded)]
        out = self._embedded(embedded[0], where) if embedded else self._base(tp, where)
        self._apply(out, meta, where)
        return ordered(out)

    def _embedded(self, marker: m.Embedded, where: str) -> Schema:
        try:
            return embedded_schema(
                self.openapi if self.openapi is not None else snapshot(), marker.definition,
                metadata_fields=marker.metadata_fields,
                metadata_description=marker.metadata_description, required=marker.required)
        except GenerateError as err:
            raise SchemaError(f"{where}: {err}") from None

    def _base(self, tp: Any, where: str) -> Schema:
        origin = typing.get_origin(tp)
        if tp is Any or tp is object:
            return {"x-kubernetes-preserve-unknown-fields": True}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        if tp is str:
            return {"type": "string"}
        if tp is bytes:
            return {"type": "string", "format": "byte"}
        if tp is dt.datetime:
            return {"type": "string", "format": "date-time"}
        if tp is dt.date:
            return {"type": "string", "format": "date"}
        if origin is typing.Literal:
            values = typing.get_args(tp)
            return {"type": _json_type(values, where), "enum": list(values)}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            values = tuple(member.value for member in tp)
            return {"type": _json_type(values, where), "enum": list(values)}
        if origin in (list, tuple, set, frozenset):
            args = typing.get_args(tp)
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                raise SchemaError(f"{where}: only tuple[T, ...] maps to a list")
            return {"type": "array", "items": self.type_schema(args[0], f"{where}[]")}
        if origin is dict:
            key, value = typing.get_args(tp)
            if key is not str:
                raise SchemaError(f"{where}: map keys must be str")
            if value is Any:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            return {"type": "object",
                    "additionalProperties": self.type_schema(value, f"{where}[*]")}
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            return self.struct_schema(tp, where)
        raise SchemaError(f"{where}: cannot express {tp!r} as a structural schema")

    def struct_schema(self, cls: type[msgspec.Struct], where: str) -> Schema:
        if cls in self._stack:
            raise SchemaError(f"{where}: {cls.__name__} is recursive (CRD schemas cannot be)")
        self._stack.append(cls)
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
            props: Schema = {}
            required: list[str] = []
            for info in msgspec.structs.fields(cls):
                path = f"{where}.{info.encode_name}" if where else info.encode_name
                node = self.type_schema(hints[info.name], path)
                has_default = (info.default is not msgspec.NODEFAULT
                               or info.default_factory is not msgspec.NODEFAULT)
                if not has_default or m.is_required(hints[info.name]):
                    required.append(info.encode_name)
                elif "default" not in node and info.default is not msgspec.NODEFAULT:
                    value = _scalar_default(info.default)
                    if value is not None:
                        node["default"] = value
                        node = ordered(node)
                props[info.encode_name] = node
            out: Schema = {"type": "object", "properties": props}
            if required:
                out["required"] = required
            rules = getattr(cls, "__rules__", ())
            if rules:
                out["x-kubernetes-validations"] = [r.to_schema() for r in rules]
            return out
        finally:
            self._stack.pop()

    def _apply(self, out: Schema, meta: tuple[Any, ...], where: str) -> None:
        rules: list[Schema] = []
        for marker in meta:
            if isinstance(marker, str):
                out["description"] = marker
            elif isinstance(marker, m.Minimum | m.Maximum):
                self._expect(out, ("integer", "number"), marker, where)
                out["minimum" if isinstance(marker, m.Minimum) else "maximum"] = marker.value
            elif isinstance(marker, m.MinLength | m.MaxLength | m.Pattern):
                self._expect(out, ("string",), marker, where)
                if isinstance(marker, m.Pattern):
                    out["pattern"] = marker.regex
                else:
                    key = "minLength" if isinstance(marker, m.MinLength) else "maxLength"
                    out[key] = marker.value
            elif isinstance(marker, m.MinItems | m.MaxItems | m.ListType):
                self._expect(out, ("array",), marker, where)
                if isinstance(marker, m.ListType):
                    self._list_type(out, marker, where)
                else:
                    out["minItems" if isinstance(marker, m.MinItems) else "maxItems"] = (
                        marker.value)
            elif isinstance(marker, m.MinProperties | m.MaxProperties):
                self._expect(out, ("object",), marker, where)
                key = "minProperties" if isinstance(marker, m.MinProperties) else (
                    "maxProperties")
                out[key] = marker.value
            elif isinstance(marker, m.MapType):
                self._expect(out, ("object",), marker, where)
                out["x-kubernetes-map-type"] = marker.type
            elif isinstance(marker, m.Format):
                out["format"] = marker.name
            elif isinstance(marker, m.Default):
                out["default"] = marker.value
            elif marker is m.Nullable:
                out["nullable"] = True
            elif marker is m.PreserveUnknownFields:
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(marker, m.Rule):
                rules.append(marker.to_schema())
            elif isinstance(marker, m.Embedded):
                pass
            elif marker is INT32_RANGE or marker is INT64_RANGE:
                pass  # the decoder's range of an Int32/Int64: its format says it
            elif isinstance(marker, msgspec.Meta):
                raise SchemaError(f"{where}: use pyctrl.api markers, not msgspec.Meta")
        if rules:
            out["x-kubernetes-validations"] = [*out.get("x-kubernetes-validations", ()), *rules]

    @staticmethod
    def _expect(out: Schema, types_: tuple[str, ...], marker: object, where: str) -> None:
        if out.get("type") not in types_:
            raise SchemaError(f"{where}: {type(marker).__name__} applies to "
                              f"{'/'.join(types_)}, not {out.get('type', 'untyped')}")

    @staticmethod
    def _list_type(out: Schema, marker: m.ListType, where: str) -> None:
        out["x-kubernetes-list-type"] = marker.type
        if marker.type != "map":
            return
        items = out["items"]
        if items.get("type") != "object":
            raise SchemaError(f"{where}: a list-map's items must be objects")
        for key in marker.keys:
            prop = items.get("properties", {}).get(key)
            if prop is None:
                raise SchemaError(f"{where}: list-map key {key!r} is not a field of the items")
            if key not in items.get("required", ()) and "default" not in prop:
                raise SchemaError(f"{where}: list-map key {key!r} must be required or "
                                  "defaulted (a structural schema rule)")
        out["x-kubernetes-list-map-keys"] = list(marker.keys)


def type_schema(tp: Any, *, openapi: Mapping[str, Any] | None = None,
                where: str = "") -> Schema:
    """The structural schema of one type (``openapi`` replaces the committed snapshot)."""
    schema = _Builder(openapi).type_schema(tp, where)
    check_rule_costs(schema, where)
    return schema


def object_schema(cls: type[msgspec.Struct], *, description: str = "",
                  rules: tuple[m.Rule, ...] = (),
                  openapi: Mapping[str, Any] | None = None) -> Schema:
    """The ``openAPIV3Schema`` of a top-level :class:`~pyctrl.api.types.Object` subclass:
    ``apiVersion``/``kind`` strings, ``metadata`` an object (with ``name`` when a rule reads
    it), then the class's own fields; ``rules`` are CEL rules on the whole object."""
    builder = _Builder(openapi)
    props: Schema = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                     "metadata": {"type": "object"}}
    if any("metadata.name" in r.rule for r in rules):
        props["metadata"]["properties"] = {"name": {"type": "string"}}
    own = builder.struct_schema(cls, "")
    for name, node in own["properties"].items():
        if name not in props:
            props[name] = node
    out: Schema = {"type": "object"}
    if description:
        out["description"] = description
    required = [r for r in own.get("required", ()) if r not in ("apiVersion", "kind",
                                                                 "metadata")]
    if required:
        out["required"] = required
    validations = [*own.get("x-kubernetes-validations", ()), *(r.to_schema() for r in rules)]
    if validations:
        out["x-kubernetes-validations"] = validations
    out["properties"] = props
    schema = ordered(out)
    check_rule_costs(schema, "")
    return schema


# -- CEL cost bounds ------------------------------------------------------------------------------
def _walk(schema: Schema, where: str) -> Iterator[tuple[str, Schema]]:
    yield where, schema
    for name, node in (schema.get("properties") or {}).items():
        yield from _walk(node, f"{where}.{name}" if where else name)
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], f"{where}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{where}[*]")


def _unbounded(node: Schema) -> str | None:
    kind = node.get("type")
    if kind == "string" and not ("maxLength" in node or "enum" in node
                                 or node.get("format") in _FIXED_SIZE_FORMATS):
        return "a string without maxLength"
    if kind == "array" and "maxItems" not in node:
        return "a list without maxItems"
    if kind == "object" and "additionalProperties" in node and "maxProperties" not in node:
        return "a map without maxProperties"
    if node.get("x-kubernetes-preserve-unknown-fields") and kind != "object":
        return "a free-form value"
    return None


# ``self.a.b`` or ``oldSelf.a.b``; a trailing ``(`` makes the last name a method or macro.
_PATH = re.compile(r"\b(?:self|oldSelf)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)(\()?")


def _references(text: str) -> Iterator[tuple[list[str], bool]]:
    """(field names, iterated by a macro) for every ``self.a.b`` path in a rule."""
    for match in _PATH.finditer(text):
        names = match.group(1).lstrip(".").split(".")
        macro = False
        if match.group(2):
            macro = names[-1] in _MACROS
            names = names[:-1]
        if names:
            yield names, macro


def _resolve(node: Schema, names: list[str]) -> Schema | None:
    for name in names:
        props = node.get("properties") or {}
        if name in props:
            node = props[name]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return None
    return node


def check_rule_costs(schema: Schema, where: str) -> None:
    """Raise :class:`SchemaError` for a CEL rule over an unbounded value (module docstring)."""
    for path, node in _walk(schema, where):
        for rule in node.get("x-kubernetes-validations") or ():
            text = str(rule["rule"])
            label = path or "<root>"
            problem = _unbounded(node)
            if problem:
                raise SchemaError(f"{label}: CEL rule {text!r} runs over {problem}; bound it "
                                  "(the apiserver rejects or may not bound its cost)")
            for names, macro in _references(text):
                if not path and names[:2] in (["metadata", "name"],
                                              ["metadata", "generateName"]):
                    continue
                target = _resolve(node, names)
                if target is None:
                    raise SchemaError(f"{label}: CEL rule {text!r} names self.{'.'.join(names)}"
                                      ", which the schema does not have")
                targets = list(_walk(target, "")) if macro else [("", target)]
                for sub, t in targets:
                    problem = _unbounded(t)
                    if problem:
                        at = ".".join(names) + sub
                        raise SchemaError(f"{label}: CEL rule {text!r} reads self.{at}, "
                                          f"{problem}; bound it")
