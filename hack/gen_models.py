"""Generate ``pyctrl/models`` (typed built-in kinds) from Kubernetes' own OpenAPI v3 spec.

Usage (project venv)::

    .venv/bin/python hack/gen_models.py              # snapshot from the spec (if found) + code
    .venv/bin/python hack/gen_models.py --check      # exit 1 if pyctrl/models is stale
    ... --spec DIR     # api/openapi-spec/v3 of k8s.io/kubernetes (default: the Go module
                       # cache's copy of the version pinned in hack/controlplane/go.mod)

Contract:

* Input: the OpenAPI v3 documents the ``k8s.io/kubernetes`` module carries
  (``api/openapi-spec/v3``), every group/version one (:data:`DOCUMENT`: alpha and beta
  versions too). Every kind in them (a schema with ``x-kubernetes-group-version-kind``, but
  the ``...List`` ones and meta's) and every type they reference is kept, in a committed
  snapshot (``hack/models-openapi.json``: trimmed schemas, descriptions cut to their first
  sentence, each module's apiVersion, and each kind's plural, scope and status subresource
  read from its collection's paths: listed, or only created as the reviews are). Without
  the spec on disk the snapshot is the input, so generation and ``--check`` need no Go.
* Output: one module per group/version, named ``<package>_<version>`` after the spec's Go
  package (``core_v1``, ``apps_v1``, ``apiextensions_v1``, ``resource_v1beta2``, ...
  ``meta_v1``), each
  class a :class:`pyctrl.api.Struct` (``kw_only``, every field defaulted so decoding tolerates
  what the server omits). Field types: a field the spec gives a zero ``default`` (a Go value
  field) or lists as required is non-optional with its zero value (or the spec's default); a
  list or map defaults empty; anything else is ``T | None = None``. IntOrString is
  ``int | str``, Quantity ``str``, Time/MicroTime ``datetime``, a free-form object
  (RawExtension too) ``Mapping[str, object]``, any JSON value ``object``, and the CRD
  schema's two-shape fields their union (:data:`ALIASES`). Names are snake_case;
  ``name="..."`` is written where msgspec's camel renaming would not give the JSON name back
  (``podIPs``, ``$ref``), and Python keywords and type names (``bool``, ``int``) get a
  trailing underscore. Kinds with a collection subclass :class:`pyctrl.api.Object` and carry
  their KindInfo (``@kind``), so :func:`pyctrl.api.resource_for` derives their Resource; a
  subresource's body (Scale, Eviction, TokenRequest) is a plain Struct. Lists are
  ``Sequence[T] = ()`` and maps ``Mapping[str, T] = EMPTY_MAP`` (read-only types; an absent
  one allocates nothing), and classes are ``gc=False`` (decoded API objects hold no cycles;
  untracked they are smaller and cost the collector nothing): docs/DESIGN.md has the figures.
* ``meta_v1`` re-exports the hand-written :class:`pyctrl.api.ObjectMeta`,
  :class:`~pyctrl.api.OwnerReference` and :class:`~pyctrl.api.Condition` (one type for user
  kinds and built-in ones); generation fails if their fields no longer match the spec's.
* Modules import only ``meta_v1`` and ``core_v1`` (no cycle), and nothing imports them but
  a user: ``import pyctrl`` loads none of them (a unit test checks both).
* Deterministic: the same snapshot always gives the same files (a unit test regenerates into
  a temp dir and diffs).
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "hack" / "models-openapi.json"
OUT = ROOT / "pyctrl" / "models"
GO_MOD = ROOT / "hack" / "controlplane" / "go.mod"
COMMAND = "hack/gen_models.py"

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
META_MODULE = "meta_v1"
# One OpenAPI document per group/version: api__v1_openapi.json,
# apis__<group>__<version>_openapi.json (the group-only ones list no kinds).
DOCUMENT = re.compile(r"(api|apis__[a-z0-9.-]+)__(v[0-9]+(?:(?:alpha|beta)[0-9]+)?)_openapi\.json")
# The spec's Go packages -> modules: io.k8s.api.core.v1 -> core_v1,
# io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1 -> apiextensions_v1.
_PACKAGE = re.compile(r"io\.k8s\.[a-z-]+(?:\.[a-z]+)*\.([a-z0-9]+)\.(v[0-9a-z]+)")

INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
TIMES = (f"{META}.Time", f"{META}.MicroTime")
_APIEXT = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"
# Schemas that are no class: a free-form value, or one of two shapes (the spec has no type
# for them); name -> (Python type, the collections.abc names it uses).
ALIASES: dict[str, tuple[str, tuple[str, ...]]] = {
    INT_OR_STRING: ("int | str", ()),
    QUANTITY: ("str", ()),
    "io.k8s.apimachinery.pkg.runtime.RawExtension": ("Mapping[str, object]", ("Mapping",)),
    f"{_APIEXT}.JSON": ("object", ()),
    f"{_APIEXT}.JSONSchemaPropsOrArray": (
        "JSONSchemaProps | Sequence[JSONSchemaProps]", ("Sequence",)),
    f"{_APIEXT}.JSONSchemaPropsOrBool": ("JSONSchemaProps | bool", ()),
    f"{_APIEXT}.JSONSchemaPropsOrStringArray": ("JSONSchemaProps | Sequence[str]",
                                                ("Sequence",)),
}
# Hand-written in pyctrl.api.types (field name in the spec -> excluded on purpose).
HAND_WRITTEN: dict[str, frozenset[str]] = {
    f"{META}.ObjectMeta": frozenset({"managedFields", "selfLink"}),
    f"{META}.OwnerReference": frozenset(),
    f"{META}.Condition": frozenset(),
}
REEXPORTED = ("Condition", "ObjectMeta", "OwnerReference")  # by meta_v1
OBJECT_FIELDS = ("apiVersion", "kind", "metadata")  # declared by pyctrl.api.Object
# Schema keys the snapshot keeps; anything else in a kept schema is dropped on purpose
# (patch strategies and list types only matter to the server and to CRD generation).
NULLABLE = "x-pyctrl-nullable"  # the snapshot's: fields the server may send as null
_KEPT = ("type", "format", "required", "default", "additionalProperties", "items",
         "properties", "allOf", "$ref", "oneOf")
Schema = dict[str, Any]
LINE = 100  # ruff's line length


class GenerateError(RuntimeError):
    """The spec holds something this generator does not translate."""


# -- spec -> snapshot ----------------------------------------------------------------------
def pinned_version() -> str:
    """The k8s.io/kubernetes version hack/controlplane builds."""
    for line in GO_MOD.read_text().splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "k8s.io/kubernetes" and words[1].startswith("v"):
            return words[1]
    raise GenerateError(f"no k8s.io/kubernetes version in {GO_MOD}")


def module_cache() -> Path:
    """Go's module cache (``go env GOMODCACHE``, else ~/go/pkg/mod)."""
    try:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        cache = os.path.expanduser("~/go/pkg/mod")
    return Path(cache)


def default_spec_dir(version: str) -> Path | None:
    """The module cache's api/openapi-spec/v3 for ``version``, when it is there."""
    path = module_cache() / "k8s.io" / f"kubernetes@{version}" / "api" / "openapi-spec" / "v3"
    return path if path.is_dir() else None


def first_sentence(text: str) -> str:
    """The description's first sentence, whitespace collapsed (``e.g.``/``i.e.`` kept)."""
    text = " ".join(text.split())
    for match in re.finditer(r"\.(\s|$)", text):
        head = text[:match.start()]
        if re.search(r"(\be\.g|\bi\.e|\betc|\bvs)$", head):
            continue
        return head + "."
    return text


def _refname(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):  # not a property named "$ref"
                yield _refname(value)
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _trim(node: Any) -> Any:
    if isinstance(node, list):
        return [_trim(v) for v in node]
    if not isinstance(node, Mapping):
        return node
    out: Schema = {}
    if "description" in node:
        out["description"] = first_sentence(node["description"])
    for key in _KEPT:
        if key not in node:
            continue
        value = node[key]
        if key == "properties":
            out[key] = {k: _trim(v) for k, v in sorted(value.items())}
        elif key in ("items", "additionalProperties", "allOf", "oneOf"):
            out[key] = _trim(value)
        else:
            out[key] = value
    return out


def module_of_prefix(prefix: str) -> str:
    """The module of a schema-name prefix (a Go package): ``<package>_<version>``."""
    match = _PACKAGE.fullmatch(prefix)
    if match is None:
        raise GenerateError(f"no module for {prefix}")
    return f"{match[1]}_{match[2]}"


def _gvks(schema: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    return [(g["group"], g["version"], g["kind"])
            for g in schema.get("x-kubernetes-group-version-kind", ())]


def _is_root(name: str, schema: Mapping[str, Any]) -> bool:
    """A kind of a group (every one, not meta's; not the lists, which pyctrl never decodes
    whole: a LIST's items are decoded one by one)."""
    if name.startswith(META + ".") or not _gvks(schema):
        return False
    props = schema.get("properties", {})
    return not (name.endswith("List") and "items" in props and "metadata" in props)


def build_snapshot(spec_dir: Path, version: str) -> Schema:
    """Every kind of every group/version in the spec and the closure of the types they
    reference, trimmed, with each kind's REST facts and each module's apiVersion."""
    schemas: Schema = {}
    paths: list[tuple[str, Mapping[str, Any]]] = []
    documents = sorted(p for p in spec_dir.iterdir() if DOCUMENT.fullmatch(p.name))
    if not documents:
        raise GenerateError(f"no group/version documents in {spec_dir}")
    for path in documents:
        doc = json.loads(path.read_text())
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            if name in schemas and schemas[name] != schema:
                raise GenerateError(f"{name} differs between documents")
            schemas[name] = schema
        paths += doc.get("paths", {}).items()
    roots = sorted(name for name, schema in schemas.items() if _is_root(name, schema))
    kinds: Schema = {}
    modules: dict[str, str] = {META_MODULE: "meta/v1"}
    for name in roots:
        module = module_of_prefix(name.rsplit(".", 1)[0])
        (group, gv, kind), *_ = _gvks(schemas[name])
        api_version = f"{group}/{gv}" if group else gv
        if modules.setdefault(module, api_version) != api_version:
            raise GenerateError(f"{module} holds {modules[module]} and {api_version}")
        facts = _rest_facts(paths, group, gv, kind)
        if facts is not None:
            kinds[name] = facts
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        if name not in schemas:
            raise GenerateError(f"{name} is referenced but not defined")
        seen.add(name)
        stack.extend(_refs(schemas[name]))
    # managedFields (FieldsV1, ManagedFieldsEntry) is not part of the typed ObjectMeta.
    seen -= {f"{META}.ManagedFieldsEntry", f"{META}.FieldsV1"}
    from hack.gen_models_go import nullable_fields

    nullable = nullable_fields(module_cache(), version, {
        name.rsplit(".", 1)[0] for name in seen if name not in ALIASES})
    trimmed = {name: _trim(schemas[name]) for name in sorted(seen)}
    for name, fields in nullable.items():
        if name in trimmed:
            trimmed[name][NULLABLE] = fields
    return {"version": version,
            "modules": dict(sorted(modules.items())),
            "kinds": dict(sorted(kinds.items())),
            "schemas": trimmed}


def _rest_facts(paths: list[tuple[str, Mapping[str, Any]]], group: str, version: str,
                kind: str) -> Schema | None:
    """A kind's plural, scope and status subresource, from its collection's paths (listed,
    or only created: the reviews); None for a kind without a collection of its own (Scale,
    Eviction: a subresource's body)."""
    base = f"/apis/{group}/{version}/" if group else f"/api/{version}/"
    plural = ""
    namespaced = status = False
    for path, item in paths:
        if not path.startswith(base):
            continue
        segments = path[len(base):].split("/")
        for op in item.values():
            if not isinstance(op, Mapping) or op.get("x-kubernetes-group-version-kind") != {
                    "group": group, "version": version, "kind": kind}:
                continue
            action = op.get("x-kubernetes-action")
            scoped = segments[:2] == ["namespaces", "{namespace}"] and len(segments) > 2
            collection = segments[2:] if scoped else segments
            if action in ("list", "post") and len(collection) == 1:
                plural = collection[0]
                namespaced = namespaced or scoped
            if (action == "put" and len(collection) == 3 and collection[1] == "{name}"
                    and collection[2] == "status"):
                status = True
    if not plural:
        return None
    return {"plural": plural, "scope": "Namespaced" if namespaced else "Cluster",
            "status": status}


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
            return self.ref_type(_refname(only["$ref"]))
        if "$ref" in schema:
            return self.ref_type(_refname(schema["$ref"]))
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
        ref = _refname(schema["allOf"][0]["$ref"]) if "allOf" in schema else ""
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


def write(files: Mapping[str, str], out: Path, check: bool) -> int:
    """Write ``files`` into ``out`` (or, with ``check``, diff them against it: 1 if stale)."""
    status = 0
    existing = {p.name for p in out.glob("*.py")} if out.is_dir() else set()
    for name in sorted(existing - set(files)):
        if check:
            print(f"{out / name}: not generated", file=sys.stderr)
            status = 1
        else:
            (out / name).unlink()
    for name, text in files.items():
        path = out / name
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if check:
            sys.stderr.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), text.splitlines(keepends=True),
                str(path), f"{path} (generated)"))
            status = 1
        else:
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if status:
        print(f"pyctrl/models is stale: run {COMMAND}", file=sys.stderr)
    return status


def snapshot_text(snapshot: Mapping[str, Any]) -> str:
    """The snapshot file's text (stable key order, one schema a line for small diffs)."""
    lines = ["{", f'"version": {json.dumps(snapshot["version"])},',
             f'"modules": {json.dumps(snapshot["modules"], sort_keys=True)},',
             f'"kinds": {json.dumps(snapshot["kinds"], sort_keys=True)},', '"schemas": {']
    items = list(snapshot["schemas"].items())
    for i, (name, schema) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"{json.dumps(name)}: {json.dumps(schema, sort_keys=True)}{comma}")
    return "\n".join([*lines, "}", "}"]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, help="api/openapi-spec/v3 of k8s.io/kubernetes")
    parser.add_argument("--out", type=Path, default=OUT, help="package directory to write")
    parser.add_argument("--check", action="store_true", help="write nothing; 1 if stale")
    args = parser.parse_args(argv)
    version = pinned_version()
    spec_dir = args.spec or default_spec_dir(version)
    if spec_dir is not None:
        text = snapshot_text(build_snapshot(spec_dir, version))
        old = SNAPSHOT.read_text() if SNAPSHOT.exists() else ""
        if text != old:
            if args.check:
                print(f"{SNAPSHOT} differs from {spec_dir}: run {COMMAND}", file=sys.stderr)
                return 1
            SNAPSHOT.write_text(text)
    elif not args.check:
        print(f"no spec for {version} (go mod download k8s.io/kubernetes@{version}); "
              f"generating from {SNAPSHOT}", file=sys.stderr)
    snapshot = json.loads(SNAPSHOT.read_text())
    return write(generate(snapshot), args.out, args.check)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
