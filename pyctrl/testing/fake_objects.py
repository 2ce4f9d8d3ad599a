"""Object plumbing shared by the FakeClient's parts (tracker, watch fan-out, client).

Contract: :func:`copy_object` / :func:`copy_any` deep-copy through JSON (what crosses the
fake's boundary is exactly what would cross the wire, and callers can never alias the
store); :func:`meta_of` returns ``obj["metadata"]``, creating it (in place) when missing;
:func:`resource_key` identifies a resource across versions (group, plural); :func:`scope`
resolves the namespace of a request as the API server does (BadRequest when the object's
namespace contradicts the request's; ValueError when a namespaced resource gets none and
one is required).
"""

from __future__ import annotations

from typing import Any

import orjson

from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import Resource
from pyctrl.kube.status import new_bad_request

__all__ = ["copy_any", "copy_object", "meta_of", "name_of", "resource_key", "scope"]


def copy_object(obj: RawObject) -> RawObject:
    out: RawObject = orjson.loads(orjson.dumps(obj))
    return out


def copy_any(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def partial_metadata(obj: RawObject) -> RawObject:
    """``obj`` as the API server sends it to a metadata-only client: ``PartialObjectMetadata``
    with a copy of the metadata (a Status, as in an ERROR event, is left alone)."""
    if obj.get("kind") == "Status":
        return obj
    return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": copy_any(obj.get("metadata") or {})}


def meta_of(obj: RawObject) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def resource_key(resource: Resource) -> tuple[str, str]:
    return (resource.group, resource.plural)


def name_of(obj: RawObject) -> str:
    name = meta_of(obj).get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    return str(name)


def scope(resource: Resource, namespace: str | None, obj: RawObject | None = None,
          required: bool = True) -> str:
    """The request's namespace ("" for cluster-scoped resources); see module docstring."""
    if not resource.namespaced:
        return ""
    ns = namespace or (meta_of(obj).get("namespace") if obj is not None else None)
    if obj is not None and namespace and meta_of(obj).get("namespace") not in (None, "",
                                                                                namespace):
        raise new_bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
    if required and not ns:
        raise ValueError(f"{resource} is namespaced: a namespace is required")
    return str(ns or "")
