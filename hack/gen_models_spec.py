"""The input side of hack/gen_models.py: the pinned Kubernetes version's OpenAPI v3 spec ->
the committed snapshot (hack/models-openapi.json); what is kept and why is in
hack/gen_models.py's docstring. The names the snapshot and the code generator share (the
special schemas, the hand-written ones) live here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GO_MOD = ROOT / "pyctrl" / "testing" / "envtest" / "gomod" / "go.mod"

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
# Schema keys the snapshot keeps; anything else in a kept schema is dropped on purpose
# (patch strategies and list types only matter to the server and to CRD generation).
NULLABLE = "x-pyctrl-nullable"  # the snapshot's: fields the server may send as null
_KEPT = ("type", "format", "required", "default", "additionalProperties", "items",
         "properties", "allOf", "$ref", "oneOf")
Schema = dict[str, Any]




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


def refname(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):  # not a property named "$ref"
                yield refname(value)
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


