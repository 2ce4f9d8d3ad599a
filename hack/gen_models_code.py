"""The output side of hack/gen_models.py: the snapshot -> the text of each ``pyctrl/models``
module; the translation rules are in hack/gen_models.py's docstring.
"""

from __future__ import annotations

import json
import keyword
import re
import textwrap
from collections.abc import Mapping
from typing import Any

import msgspec

from hack.gen_models_spec import (
    ALIASES,
    HAND_WRITTEN,
    NULLABLE,
    TIMES,
    GenerateError,
    module_of_prefix,
    refname,
)

COMMAND = "hack/gen_models.py"
REEXPORTED = ("Condition", "ObjectMeta", "OwnerReference")  # by meta_v1
OBJECT_FIELDS = ("apiVersion", "kind", "metadata")  # declared by pyctrl.api.Object
LINE = 100  # ruff's line length


# -- snapshot -> code ----------------------------------------------------------------------
def snake(name: str) -> str:
    """camelCase -> snake_case, keeping plural acronyms whole (podIPs -> pod_ips); other
    characters separate words (``$ref`` -> ``ref``, ``x-kubernetes-list-type`` ->
    ``x_kubernetes_list_type``); a keyword or a type's name gets a trailing underscore."""
    out = "_".join(_snake_word(part) for part in re.split(r"[^A-Za-z0-9]+", name) if part)
    if not out:
        raise GenerateError(f"cannot split field name {name!r}")
    return out + "_" if keyword.iskeyword(out) or out in _SHADOWING else out


# Names the annotations use: a field named so would shadow them when msgspec evaluates the
# class's annotations in its namespace (DeviceAttribute's ``bool`` and ``int``).
_SHADOWING = frozenset({"bool", "int", "str", "float", "object", "datetime", "field"})


def _snake_word(name: str) -> str:
    words = re.findall(r"[A-Z]{2,}s(?![a-z])|[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+",
                       name)
    if "".join(words) != name:
        raise GenerateError(f"cannot split field name {name!r}")
    return "_".join(w.lower() for w in words)


def _camel(py_name: str) -> str:
    """The JSON name msgspec's ``rename="camel"`` gives ``py_name``."""
    return str(msgspec.defstruct("T", [(py_name, int)], rename="camel")
               .__struct_encode_fields__[0])


def _module_of(name: str) -> str:
    return module_of_prefix(name.rsplit(".", 1)[0])


def _wrapped_call(opening: str, args: list[str], indent: int = 6) -> list[str]:
    """``opening`` + ``args`` + ``)``, wrapped at :data:`LINE` (continuation ``indent``)."""
    lines = [opening]
    for i, arg in enumerate(args):
        piece = arg + (", " if i < len(args) - 1 else ")")
        if len(lines[-1] + piece.rstrip()) > LINE:
            lines[-1] = lines[-1].rstrip()
            lines.append(" " * indent)
        lines[-1] += piece
    return lines


# Typographic characters some descriptions carry, as ASCII (ruff flags them as ambiguous).
_ASCII = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                        "\u2013": "-", "\u2014": "-", "\u00a0": " "})


def _docstring(text: str, indent: str) -> list[str]:
    text = text.translate(_ASCII).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    text = text.strip() or "(no description)"
    lines = textwrap.wrap(text, width=LINE - 6 - len(indent), break_long_words=False,
                          break_on_hyphens=False)
    if lines[-1].endswith('"'):  # would close the docstring early
        lines[-1] = lines[-1][:-1] + '\\"'
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}', *[f"{indent}{ln}" for ln in lines[1:]],
            f'{indent}"""']


class _Module:
    def __init__(self, name: str, snapshot: Mapping[str, Any]) -> None:
        self.name = name
        self.snapshot = snapshot
        self.imports: set[str] = set()
        self.uses_datetime = False
        self.uses_field = False
        self.deps: dict[str, set[str]] = {}
        self.abc: set[str] = set()
        self.uses_empty_map = False
        self.nulls: dict[str, list[tuple[str, str]]] = {}  # class -> (field, default) of nulls

    def ref_type(self, ref: str) -> str:
        if ref in ALIASES:
            typ, abc = ALIASES[ref]
            if "JSONSchemaProps" in typ and self.name != _module_of(ref):
                raise GenerateError(f"{ref} used outside its module")
            self.abc.update(abc)
            return typ
        if ref in TIMES:
            self.uses_datetime = True
            return "datetime"
        module = _module_of(ref)
        cls = ref.rsplit(".", 1)[-1]
        if module == self.name:
            return cls
        self.imports.add(module)
        return f"{module}.{cls}"

    def type_of(self, schema: Mapping[str, Any], where: str) -> str:
        if "allOf" in schema:
            (only,) = schema["allOf"]
            return self.ref_type(refname(only["$ref"]))
        if "$ref" in schema:
            return self.ref_type(refname(schema["$ref"]))
        kind = schema.get("type")
        if kind == "string":
            return "str"
        if kind == "integer":
            return "int"
        if kind == "number":
            return "float"
        if kind == "boolean":
            return "bool"
        if kind == "array":
            self.abc.add("Sequence")
            return f"Sequence[{self.type_of(schema['items'], where)}]"
        if kind == "object":
            if "additionalProperties" in schema:
                self.abc.add("Mapping")
                return f"Mapping[str, {self.type_of(schema['additionalProperties'], where)}]"
            self.abc.add("Mapping")
            return "Mapping[str, object]"
        raise GenerateError(f"{where}: cannot type {schema}")

    def field_line(self, cls: str, prop: str, schema: Mapping[str, Any],
                   required: bool, nullable: bool) -> list[str]:
        where = f"{cls}.{prop}"
        py_name = snake(prop)
        typ = self.type_of(schema, where)
        ref = refname(schema["allOf"][0]["$ref"]) if "allOf" in schema else ""
        has_default = "default" in schema
        rename = "" if _camel(py_name) == prop else f'name="{prop}"'
        if typ.startswith(("Sequence[", "Mapping[")):
            empty = "()" if typ.startswith("Sequence[") else "EMPTY_MAP"
            if empty == "EMPTY_MAP":
                self.uses_empty_map = True
            value = f"field(default={empty}, {rename})" if rename else empty
            null = empty
        elif (has_default or required) and ref and ref not in TIMES and ref not in ALIASES:
            value = f"field(default_factory={typ}{', ' + rename if rename else ''})"
            null = f"{typ}()"
            if "." not in typ:  # a class of this module: it must be defined first
                self.deps.setdefault(cls, set()).add(typ)
        elif (has_default or required) and typ in ("str", "int", "float", "bool"):
            default = schema.get("default", {"str": "", "int": 0, "float": 0.0,
                                             "bool": False}[typ])
            if isinstance(default, (dict, list)):
                raise GenerateError(f"{where}: default {default!r} for {typ}")
            literal = json.dumps(default) if typ != "bool" else repr(default)
            value = f"field(default={literal}, {rename})" if rename else literal
            null = literal
        else:
            typ = f"{typ} | None" if typ != "object" else typ  # object: None is one already
            value = f"field(default=None, {rename})" if rename else "None"
            nullable = False  # None is a value of the field already
        if nullable:  # T to a type checker, T | None to msgspec; __post_init__ fills it
            typ = f"Nullable[{typ}]"
            self.nulls.setdefault(cls, []).append((py_name, null))
        line = f"    {py_name}: {typ} = {value}"
        if len(f"    {py_name}: {typ} = field(") > LINE:
            line = f"    {py_name}: (\n        {typ}) = {value}"
        elif len(line) > LINE:
            if not value.startswith("field("):
                value = f"field(default={value})"
            line = f"    {py_name}: {typ} = field(\n        {value[len('field('):]}"
        if value.startswith("field("):
            self.uses_field = True
        lines = [line]
        if schema.get("description"):
            lines += _docstring(schema["description"], "    ")
        return lines

    def class_lines(self, name: str, schema: Mapping[str, Any],
                    kind: Mapping[str, Any] | None) -> list[str]:
        cls = name.rsplit(".", 1)[-1]
        lines = ["", ""]
        if kind is not None:
            api_version = self.snapshot["modules"][self.name]
            args = [f'"{api_version}"', f'"{cls}"', f'plural="{kind["plural"]}"',
                    f'scope="{kind["scope"]}"', "builtin=True",
                    *([] if kind["status"] else ["status_subresource=False"])]
            lines += _wrapped_call("@kind(", args)
            lines.append(f"class {cls}(Object, kw_only=True, gc=False):")
        else:
            lines.append(f"class {cls}(Struct, kw_only=True, gc=False):")
        lines += [*_docstring(schema.get("description", ""), "    "), ""]
        props = schema.get("properties", {})
        if schema.get("type") != "object" or "additionalProperties" in schema:
            raise GenerateError(f"{name}: not a plain object schema")
        required = set(schema.get("required", ()))
        nullable = set(schema.get(NULLABLE, ()))
        body: list[str] = []
        for prop, sub in props.items():
            if kind is not None and prop in OBJECT_FIELDS:
                continue
            body.append("")
            body += self.field_line(cls, prop, sub, prop in required, prop in nullable)
        if cls in self.nulls:  # a decoded null becomes the default (pyctrl.api.nullable)
            body += ["", "    def __post_init__(self) -> None:"]
            for py_name, null in self.nulls[cls]:
                body += [f"        if self.{py_name} is None:",
                         *_wrapped_call("            force_setattr(",
                                        ["self", f'"{py_name}"', null], indent=16)]
        if not body:
            return lines[:-1]
        return lines + body[1:]

    def ordered(self, names: list[str]) -> list[str]:
        """``names`` in their order, except that a class comes after the classes its
        fields' ``default_factory`` calls (those run when the class is created)."""
        out: list[str] = []
        done: set[str] = set()

        def visit(name: str, path: tuple[str, ...]) -> None:
            if name in done:
                return
            if name in path:
                raise GenerateError(f"default_factory cycle: {' -> '.join((*path, name))}")
            for dep in sorted(self.deps.get(name, ())):
                visit(dep, (*path, name))
            done.add(name)
            out.append(name)

        for name in names:
            visit(name, ())
        return out

    def render(self, classes: list[str]) -> str:
        snapshot = self.snapshot
        kinds = [c for c in classes if c in snapshot["kinds"]]
        others = [c for c in classes if c not in snapshot["kinds"]]
        texts = {name.rsplit(".", 1)[-1]: self.class_lines(
            name, snapshot["schemas"][name], snapshot["kinds"].get(name))
            for name in kinds + others}
        body = [line for cls in self.ordered(list(texts)) for line in texts[cls]]
        api_version = self.snapshot["modules"][self.name]
        reexported = REEXPORTED if self.name == "meta_v1" else ()
        exported = sorted([*reexported, *(n.rsplit(".", 1)[-1] for n in classes)])
        summary = ("Kinds: " + ", ".join(k.rsplit(".", 1)[-1] for k in kinds) + "."
                   if kinds else "No kinds: types the kinds of other modules reference.")
        if reexported:
            summary += (f" {', '.join(reexported)} are the hand-written ones of "
                        ":mod:`pyctrl.api.types`, shared by user kinds and built-in kinds.")
        head = [*textwrap.wrap(
            f'"""Kubernetes {api_version} types (generated by {COMMAND} from the OpenAPI spec '
            f"of Kubernetes {snapshot['version']}; do not edit).", width=LINE - 4),
                "", *textwrap.wrap(summary, width=LINE - 4),
                '"""', "", "from __future__ import annotations", ""]
        std = ([f"from collections.abc import {', '.join(sorted(self.abc))}"]
               if self.abc else [])
        std += ["from datetime import datetime"] if self.uses_datetime else []
        head += [*std, ""] if std else []
        if self.nulls:
            head += ["from msgspec.structs import force_setattr", ""]
        if kinds:
            head.append("from pyctrl.api.markers import kind")
        if self.nulls:
            head.append("from pyctrl.api.nullable import Nullable")
        api_names = [*(["EMPTY_MAP"] if self.uses_empty_map else []), *reexported,
                     *(["Object"] if kinds else []), *(["Struct"] if others else []),
                     *(["field"] if self.uses_field else [])]
        head.append(f"from pyctrl.api.types import {', '.join(api_names)}")
        if self.imports:
            head.append(f"from pyctrl.models import {', '.join(sorted(self.imports))}")
        head += ["", "__all__ = [", *[f'    "{n}",' for n in exported], "]"]
        return "\n".join(head + body) + "\n"


def _check_hand_written(snapshot: Mapping[str, Any]) -> None:
    from pyctrl.api import types

    for name, excluded in HAND_WRITTEN.items():
        cls = getattr(types, name.rsplit(".", 1)[-1])
        want = set(snapshot["schemas"][name]["properties"]) - excluded
        have = set(cls.__struct_encode_fields__)
        if want != have:
            raise GenerateError(f"pyctrl.api.types.{cls.__name__} has {sorted(have)}, the "
                                f"spec {sorted(want)} (minus {sorted(excluded)})")


def generate(snapshot: Mapping[str, Any]) -> dict[str, str]:
    """File name -> text of the ``pyctrl/models`` package for ``snapshot``."""
    _check_hand_written(snapshot)
    by_module: dict[str, list[str]] = {}
    for name in snapshot["schemas"]:
        if name in HAND_WRITTEN or name in ALIASES or name in TIMES:
            continue
        by_module.setdefault(_module_of(name), []).append(name)
    files = {f"{module}.py": _Module(module, snapshot).render(by_module[module])
             for module in sorted(by_module)}
    files["__init__.py"] = _package_init(snapshot, sorted(files))
    return files


def _package_init(snapshot: Mapping[str, Any], modules: list[str]) -> str:
    kinds = [(n.rsplit(".", 1)[-1], _module_of(n)) for n in snapshot["kinds"]]
    rows = "\n".join(textwrap.fill(
        f"* ``{m}``: " + ", ".join(k for k, mm in kinds if mm == m) + ".", width=LINE - 4,
        subsequent_indent="  ") for m in sorted({m for _, m in kinds}))
    return f'''"""Typed built-in Kubernetes kinds (generated by {COMMAND} from the OpenAPI spec of
Kubernetes {snapshot["version"]}; do not edit).

One module per group/version; import a kind from its module::

    from pyctrl.models.batch_v1 import Job
    from pyctrl.models.core_v1 import Container, Pod

Every kind is a :class:`pyctrl.api.Object` (the same base and the same
:class:`pyctrl.api.ObjectMeta` as your own kinds) and carries its KindInfo, so
``pyctrl.api.resource_for(Job)`` is its Resource: group, version, plural, scope and whether it
has a status subresource come from the spec's REST paths, never from a hand-kept list.

Decoding: ``msgspec.json.decode(data, type=Job)`` from the apiserver's bytes, or
``pyctrl.api.decode(Job, raw)`` from a cached dict. It is tolerant: every field has a default
(the server omits what is empty) and unknown fields (a newer server's) are ignored. Field
names are snake_case (``pod.status.pod_ips``, ``job.spec.ttl_seconds_after_finished``; a
Python keyword or a type's name gets a trailing underscore) and encode back to the spec's JSON
names.

Types: a field the spec requires, or that is a Go value field, is never None
(``job.spec.template.spec.containers``); an optional one is ``T | None``. Lists are
``Sequence[T]`` and maps ``Mapping[str, T]``: read-only, as objects shared by a cache must
be; build a changed copy with ``msgspec.structs.replace``. IntOrString is ``int | str``,
Quantity ``str``, times are aware ``datetime``.

Every kind of every group/version of that spec is here (alpha and beta versions too: a
cluster serves those only when enabled), with every type they reference; the ``...List``
kinds are not (a LIST's items are decoded one by one). A subresource's body (``Scale``,
``Eviction``, ``TokenRequest``) is a plain Struct, not a kind. Nothing imports these modules
but you: ``import pyctrl`` loads none, and a module loads only ``meta_v1`` and ``core_v1``
besides itself. ``make models`` regenerates them.

{rows}
"""
'''


