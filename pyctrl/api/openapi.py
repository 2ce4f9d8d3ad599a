"""Kubernetes types as CRD schemas: the apiserver's OpenAPI v3 made structural and inlined.

Contract:

* :func:`embedded_schema` turns one component of an OpenAPI v3 document (e.g.
  ``io.k8s.api.batch.v1.JobTemplateSpec``) into one inline *structural* schema, shaped as
  controller-gen shapes embedded core types: every ``$ref`` is inlined and its ``allOf``
  wrapper dropped; IntOrString and Quantity become ``x-kubernetes-int-or-string: true`` with
  no ``type`` (Quantity also gets controller-gen's pattern); ``required``,
  ``x-kubernetes-list-type``/``-list-map-keys``/``-map-type`` are kept; patch-strategy and
  union extensions (which CRDs cannot carry) are dropped; ``default`` is dropped except on
  list-map keys that are not required (the structural rule: such a key needs a default);
  nested ObjectMeta keeps controller-gen's embedded set (annotations, finalizers, labels,
  name, namespace). Descriptions are dropped (size: a CRD must stay well under the 256 KiB
  ``kubectl apply`` annotation limit). Anything the converter does not know is an error, so
  a new upstream construct is noticed instead of silently mistranslated.
* :func:`snapshot` is the document ``gen crd`` uses: the closure of the embeddable types
  (:data:`SNAPSHOT_ROOTS`) from the pinned Kubernetes version's ``batch/v1`` OpenAPI,
  committed as ``kubernetes-openapi.json`` next to this module (descriptions stripped) and
  refreshed by ``hack/gen_jobtemplate_schema.py``. Deterministic: the same
  document always gives the same schema.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "EMBEDDED_META_FIELDS",
    "SNAPSHOT_FILE",
    "SNAPSHOT_ROOTS",
    "GenerateError",
    "embedded_schema",
    "ordered",
    "snapshot",
    "snapshot_document",
]

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
# controller-gen's pattern for resource.Quantity (k8s.io/apimachinery's quantity grammar).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
# ObjectMeta fields kept on nested templates (controller-gen's generateEmbeddedObjectMeta set).
EMBEDDED_META_FIELDS = ("annotations", "finalizers", "labels", "name", "namespace")

# Keys copied through unchanged; anything not listed here or handled below is an error, so a
# new upstream construct is noticed instead of silently mistranslated.
_COPIED = ("type", "format", "enum", "minimum", "maximum", "minLength", "maxLength",
           "pattern", "minItems", "maxItems", "minProperties", "maxProperties", "nullable",
           "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
           "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource")
_DROPPED = ("description", "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key",
            "x-kubernetes-unions", "default")
_KEY_ORDER = ("description", "type", "format", "x-kubernetes-int-or-string", "pattern",
              "enum", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
              "minProperties", "maxProperties", "nullable", "default", "required",
              "x-kubernetes-validations", "properties", "items", "additionalProperties",
              "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
              "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource")

Schema = dict[str, Any]


class GenerateError(RuntimeError):
    """The OpenAPI document or the CRD file is not what this generator understands."""


# -- OpenAPI -> structural schema ---------------------------------------------------------
class _Converter:
    def __init__(self, schemas: Mapping[str, Any]) -> None:
        self.schemas = schemas
        self._stack: list[str] = []

    def _ref_name(self, node: Mapping[str, Any]) -> str | None:
        ref = node.get("$ref")
        if ref is None:
            all_of = node.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
                ref = all_of[0]["$ref"]
            elif all_of is not None:
                raise GenerateError(f"unsupported allOf at {self._where()}: {all_of}")
        if ref is None:
            return None
        prefix = "#/components/schemas/"
        if not str(ref).startswith(prefix):
            raise GenerateError(f"unsupported $ref {ref!r} at {self._where()}")
        return str(ref)[len(prefix):]

    def _where(self) -> str:
        return ".".join(self._stack) or "<root>"

    def definition(self, name: str) -> Schema:
        """The structural schema of the named component."""
        if name in self._stack:
            raise GenerateError(f"recursive schema {name} at {self._where()}")
        if name == INT_OR_STRING:
            return {"x-kubernetes-int-or-string": True}
        if name == QUANTITY:
            return {"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}
        try:
            node = self.schemas[name]
        except KeyError:
            raise GenerateError(f"{name} is not in the OpenAPI document") from None
        if name == OBJECT_META:
            node = dict(node, properties={k: v for k, v in node["properties"].items()
                                          if k in EMBEDDED_META_FIELDS})
        self._stack.append(name)
        try:
            return self.node(node)
        finally:
            self._stack.pop()

    def node(self, node: Mapping[str, Any], key: str = "") -> Schema:
        """Convert one schema node (a property, items or additionalProperties value)."""
        name = self._ref_name(node)
        if name is not None:
            extra = set(node) - {"$ref", "allOf", "default", "description"}
            if extra:
                raise GenerateError(f"unexpected {sorted(extra)} next to $ref at {key}")
            return self.definition(name)
        if node.get("format") == "int-or-string" or node.get("x-kubernetes-int-or-string"):
            return {"x-kubernetes-int-or-string": True}
        out: Schema = {}
        for field, value in node.items():
            if field in _COPIED:
                out[field] = copy.deepcopy(value)
            elif field == "required":
                out["required"] = sorted(value)
            elif field == "properties":
                out["properties"] = {k: self.node(v, k) for k, v in sorted(value.items())}
            elif field == "items":
                out["items"] = self.node(value, key)
            elif field == "additionalProperties":
                out["additionalProperties"] = (
                    self.node(value, key) if isinstance(value, Mapping) else value)
            elif field not in _DROPPED:
                raise GenerateError(f"unsupported {field!r} at {self._where()}.{key}")
        if "type" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            raise GenerateError(f"no type at {self._where()}.{key}: {dict(node)}")
        self._list_map_defaults(node, out)
        return ordered(out)

    def _list_map_defaults(self, node: Mapping[str, Any], out: Schema) -> None:
        """Keep upstream's default on each list-map key that is not required (and only there):
        a structural CRD rejects a list-map key that is neither required nor defaulted."""
        keys = out.get("x-kubernetes-list-map-keys") or []
        items = out.get("items") or {}
        if not keys:
            return
        upstream = node["items"]
        name = self._ref_name(upstream)
        upstream_props = (self.schemas[name] if name else upstream).get("properties", {})
        for key in keys:
            if key in items.get("required", ()):
                continue
            if "default" not in upstream_props.get(key, {}):
                raise GenerateError(f"list-map key {key} at {self._where()} is neither "
                                    "required nor defaulted upstream")
            items["properties"][key] = ordered(
                dict(items["properties"][key], default=upstream_props[key]["default"]))


def ordered(schema: Schema) -> Schema:
    """``schema`` with its keys in the order CRDs conventionally show them."""
    known = {k: schema[k] for k in _KEY_ORDER if k in schema}
    return {**known, **{k: v for k, v in schema.items() if k not in known}}




def embedded_schema(openapi: Mapping[str, Any], definition: str, *,
                    metadata_fields: Iterable[str] | None = None,
                    metadata_description: str = "",
                    required: Iterable[str] | None = None) -> Schema:
    """The structural schema of ``definition`` from an OpenAPI v3 document.

    ``metadata_fields`` keeps only those fields of the type's own ``metadata`` (with
    ``metadata_description``); ``required`` replaces the top-level ``required`` list.
    """
    schemas = (openapi.get("components") or {}).get("schemas") or {}
    if definition not in schemas:
        raise GenerateError(f"{definition} is not in the OpenAPI document")
    out = _Converter(schemas).definition(definition)
    if metadata_fields is not None:
        meta = out["properties"]["metadata"]
        trimmed = dict(meta, properties={k: meta["properties"][k] for k in metadata_fields})
        if metadata_description:
            trimmed["description"] = metadata_description
        out["properties"]["metadata"] = ordered(trimmed)
    if required is not None:
        out["required"] = list(required)
    return ordered(out)


# -- the committed snapshot --------------------------------------------------------------------
SNAPSHOT_FILE = Path(__file__).with_name("kubernetes-openapi.json")
SNAPSHOT_ROOTS = (
    "io.k8s.api.batch.v1.JobTemplateSpec",
    "io.k8s.api.batch.v1.JobSpec",
    "io.k8s.api.core.v1.PodTemplateSpec",
    "io.k8s.api.core.v1.PodSpec",
    "io.k8s.api.core.v1.Container",
    "io.k8s.api.core.v1.ResourceRequirements",
    "io.k8s.api.core.v1.EnvVar",
    "io.k8s.api.core.v1.Volume",
    "io.k8s.api.core.v1.Toleration",
    "io.k8s.api.core.v1.Affinity",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
)


def _refs(node: Any) -> Iterable[str]:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            yield ref.removeprefix("#/components/schemas/")
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _strip_descriptions(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {k: _strip_descriptions(v) for k, v in sorted(node.items())
                if k != "description"}
    if isinstance(node, list):
        return [_strip_descriptions(v) for v in node]
    return node


def snapshot_document(openapi: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The snapshot of ``openapi`` (a batch/v1 OpenAPI v3 document): the closure of
    :data:`SNAPSHOT_ROOTS`, descriptions stripped, keys sorted, tagged with ``version``."""
    schemas = openapi["components"]["schemas"]
    keep: dict[str, Any] = {}
    todo = list(SNAPSHOT_ROOTS)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        if name not in schemas:
            raise GenerateError(f"{name} is not in the OpenAPI document")
        keep[name] = _strip_descriptions(schemas[name])
        todo.extend(_refs(schemas[name]))
    return {"kubernetesVersion": version,
            "components": {"schemas": dict(sorted(keep.items()))}}


@functools.cache
def snapshot() -> dict[str, Any]:
    """The committed snapshot (see the module docstring); read once."""
    doc: dict[str, Any] = json.loads(SNAPSHOT_FILE.read_text())
    return doc
