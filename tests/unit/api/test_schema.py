"""pyctrl.api.schema: one test per schema feature, on small types (no apiserver).

No ``from __future__ import annotations`` here: the test-local classes' annotations must be
evaluated where they are written (their names are function locals).
"""

import enum
from datetime import datetime
from typing import Annotated, Any, Literal

import pytest

from pyctrl import api
from pyctrl.api import (
    Default,
    Format,
    ListType,
    MapType,
    Maximum,
    MaxItems,
    MaxLength,
    MaxProperties,
    Minimum,
    MinItems,
    MinLength,
    Nullable,
    Pattern,
    PreserveUnknownFields,
    Rule,
    SchemaError,
    type_schema,
)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Port(api.Struct):
    name: Annotated[str, MaxLength(15)]
    port: Annotated[api.Int32, Minimum(1), Maximum(65535)]
    protocol: Literal["TCP", "UDP"] = "TCP"


class Everything(api.Struct):
    title: Annotated[str, "A title.", MinLength(1), MaxLength(64), Pattern("^[A-Z]")]
    when: datetime
    count: api.Int64 = 0
    ratio: float = 0.5
    enabled: bool = False
    color: Color = Color.RED
    mode: Literal["a", "b"] = "a"
    size: Literal[1, 2, 3] = 1
    note: str = ""
    labels: Annotated[dict[str, str], MaxProperties(8)] = api.field(default_factory=dict)
    extra: dict[str, Any] = api.field(default_factory=dict)
    tags: Annotated[list[Annotated[str, MaxLength(8)]], ListType("set"), MinItems(1),
                    MaxItems(4)] = api.field(default_factory=list)
    ports: Annotated[list[Port], ListType.map("name")] = api.field(default_factory=list)
    owner: Annotated[Port, MapType("atomic")] | None = None
    maybe: Annotated[str, Nullable, MaxLength(3)] | None = None
    blob: bytes = b""
    free: Annotated[Any, PreserveUnknownFields] = None
    fixed: Annotated[list[str], Default(["x"])] = api.field(default_factory=list)
    fmt: Annotated[str, Format("duration")] = "1s"


def props() -> dict[str, Any]:
    schema = type_schema(Everything)
    assert schema["type"] == "object"
    result: dict[str, Any] = schema["properties"]
    return result


def test_required_are_the_fields_without_defaults_in_camel_case() -> None:
    assert type_schema(Everything)["required"] == ["title", "when"]
    assert type_schema(Port)["required"] == ["name", "port"]


def test_scalar_types_and_formats() -> None:
    p = props()
    assert p["when"] == {"type": "string", "format": "date-time"}
    assert p["count"] == {"type": "integer", "format": "int64", "default": 0}
    assert p["ratio"] == {"type": "number", "default": 0.5}
    assert p["enabled"] == {"type": "boolean", "default": False}
    assert p["blob"] == {"type": "string", "format": "byte"}
    assert p["fmt"] == {"type": "string", "format": "duration", "default": "1s"}
    assert type_schema(Port)["properties"]["port"] == {
        "type": "integer", "format": "int32", "minimum": 1, "maximum": 65535}


def test_string_bounds_pattern_and_description() -> None:
    assert props()["title"] == {"description": "A title.", "type": "string",
                                "pattern": "^[A-Z]", "minLength": 1, "maxLength": 64}


def test_enums_from_literal_and_enum_with_defaults() -> None:
    p = props()
    assert p["color"] == {"type": "string", "enum": ["red", "blue"], "default": "red"}
    assert p["mode"] == {"type": "string", "enum": ["a", "b"], "default": "a"}
    assert p["size"] == {"type": "integer", "enum": [1, 2, 3], "default": 1}


def test_absent_defaults_are_not_published_and_default_marker_is() -> None:
    p = props()
    assert "default" not in p["note"] and "default" not in p["maybe"]  # "" and None
    assert p["fixed"]["default"] == ["x"]
    assert "default" not in p["labels"] and "default" not in p["tags"]


def test_zero_is_a_published_default_but_empty_string_is_not() -> None:
    class Z(api.Struct):
        n: int = 0
        s: str = ""

    p = type_schema(Z)["properties"]
    assert p["n"] == {"type": "integer", "default": 0}
    assert p["s"] == {"type": "string"}


def test_maps_lists_and_list_types() -> None:
    p = props()
    assert p["labels"] == {"type": "object", "maxProperties": 8,
                           "additionalProperties": {"type": "string"}}
    assert p["extra"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert p["tags"] == {"type": "array", "minItems": 1, "maxItems": 4,
                         "items": {"type": "string", "maxLength": 8},
                         "x-kubernetes-list-type": "set"}
    assert p["ports"]["x-kubernetes-list-type"] == "map"
    assert p["ports"]["x-kubernetes-list-map-keys"] == ["name"]
    assert p["ports"]["items"]["properties"]["protocol"]["default"] == "TCP"


def test_nested_struct_map_type_nullable_and_free_form() -> None:
    p = props()
    assert p["owner"]["x-kubernetes-map-type"] == "atomic"
    assert p["owner"]["required"] == ["name", "port"]
    assert p["maybe"] == {"type": "string", "maxLength": 3, "nullable": True}
    assert p["free"] == {"x-kubernetes-preserve-unknown-fields": True}


def test_list_map_key_must_be_required_or_defaulted() -> None:
    class Item(api.Struct):
        key: str = ""

    class Bad(api.Struct):
        items: Annotated[list[Item], ListType.map("key")]

    with pytest.raises(SchemaError, match="must be required or defaulted"):
        type_schema(Bad)

    class Missing(api.Struct):
        items: Annotated[list[Port], ListType.map("nope")]

    with pytest.raises(SchemaError, match="'nope' is not a field"):
        type_schema(Missing)


def test_marker_on_the_wrong_type_is_an_error() -> None:
    class Bad(api.Struct):
        n: Annotated[int, MaxLength(3)]

    with pytest.raises(SchemaError, match="n: MaxLength applies to string, not integer"):
        type_schema(Bad)


def test_unions_recursion_and_non_string_keys_are_refused() -> None:
    class Union(api.Struct):
        v: int | str

    class Keys(api.Struct):
        m: dict[int, str]

    with pytest.raises(SchemaError, match="v: cannot express"):
        type_schema(Union)
    with pytest.raises(SchemaError, match="map keys must be str"):
        type_schema(Keys)


class Node(api.Struct):
    children: list["Node"] = api.field(default_factory=list)


def test_recursive_struct_is_refused() -> None:
    with pytest.raises(SchemaError, match="recursive"):
        type_schema(Node)


# -- CEL rules and their cost bounds -----------------------------------------------------------
def test_rules_on_fields_and_structs() -> None:
    class Range(api.Struct):
        __rules__ = (Rule("self.low <= self.high", message="low must not exceed high",
                          reason="FieldValueInvalid", field_path=".low"),)
        low: int
        high: int
        name: Annotated[str, MaxLength(10), Rule("self != 'x'", message_expression="'no'")] = ""

    schema = type_schema(Range)
    assert schema["x-kubernetes-validations"] == [{
        "rule": "self.low <= self.high", "message": "low must not exceed high",
        "reason": "FieldValueInvalid", "fieldPath": ".low"}]
    assert schema["properties"]["name"]["x-kubernetes-validations"] == [
        {"rule": "self != 'x'", "messageExpression": "'no'"}]


def test_rule_over_an_unbounded_string_is_refused() -> None:
    class S(api.Struct):
        name: Annotated[str, Rule("self.startsWith('a')")]

    with pytest.raises(SchemaError, match=r"name: CEL rule .* runs over a string without "
                                          r"maxLength"):
        type_schema(S)


def test_rule_over_an_unbounded_list_is_refused() -> None:
    class S(api.Struct):
        items: Annotated[list[Annotated[str, MaxLength(3)]], Rule("self.size() > 0")]

    with pytest.raises(SchemaError, match="a list without maxItems"):
        type_schema(S)


def test_rule_naming_an_unbounded_field_is_refused() -> None:
    class S(api.Struct):
        __rules__ = (Rule("self.a == self.b"),)
        a: Annotated[str, MaxLength(5)] = ""
        b: str = ""

    with pytest.raises(SchemaError, match=r"reads self\.b, a string without maxLength"):
        type_schema(S)


def test_rule_iterating_a_list_needs_its_items_bounded() -> None:
    class Bounded(api.Struct):
        __rules__ = (Rule("self.names.all(n, n.size() < 5)"),)
        names: Annotated[list[Annotated[str, MaxLength(8)]], MaxItems(3)] = api.field(
            default_factory=list)

    type_schema(Bounded)  # fine

    class Unbounded(api.Struct):
        __rules__ = (Rule("self.names.all(n, n.size() < 5)"),)
        names: Annotated[list[str], MaxItems(3)] = api.field(default_factory=list)

    with pytest.raises(SchemaError, match=r"reads self\.names\[\], a string without"):
        type_schema(Unbounded)


def test_rule_naming_a_missing_field_is_refused() -> None:
    class S(api.Struct):
        __rules__ = (Rule("self.nope > 1"),)
        a: int = 0

    with pytest.raises(SchemaError, match=r"names self\.nope, which the schema does not have"):
        type_schema(S)


def test_enum_and_date_time_strings_count_as_bounded() -> None:
    class S(api.Struct):
        __rules__ = (Rule("self.mode == 'a' || self.when > timestamp('2020-01-01T00:00:00Z')"),)
        mode: Literal["a", "b"] = "a"
        when: datetime | None = None

    assert type_schema(S)["x-kubernetes-validations"]


def test_msgspec_meta_is_refused_in_favour_of_markers() -> None:
    import msgspec

    class S(api.Struct):
        n: Annotated[int, msgspec.Meta(ge=0)] = 0

    with pytest.raises(SchemaError, match=r"use pyctrl\.api markers"):
        type_schema(S)


def test_marker_values_are_validated() -> None:
    with pytest.raises(ValueError, match="needs keys"):
        ListType("map")
    with pytest.raises(ValueError, match="Default"):
        Default(None)
    with pytest.raises(ValueError, match="empty"):
        Rule(" ")
