"""Object keys: how the cache names an object.

Contract (mirrors client-go ``MetaNamespaceKeyFunc``):

* A namespaced object's key is ``"<namespace>/<name>"``; a cluster-scoped object's key is
  ``"<name>"``. Keys are what handlers enqueue and what listers look up.
* :class:`DeletedFinalStateUnknown` is the tombstone the DeltaFIFO emits when a relist shows an
  object vanished while the watch was down: its ``obj`` is the last state the cache knew (it
  may be stale, or None when even that was unknown). Its key is the key it was stored under.
* :func:`deletion_handling_meta_namespace_key` accepts either an object or a tombstone, which
  is what every delete handler needs.
* Keys are read through :mod:`pyctrl.kube.meta`, so raw dicts and typed objects
  (:class:`pyctrl.api.Object`) have the same key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyctrl.kube import meta
from pyctrl.kube.meta import AnyObject

__all__ = [
    "DeletedFinalStateUnknown",
    "deletion_handling_meta_namespace_key",
    "meta_namespace_key",
    "split_meta_namespace_key",
]


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A deletion seen only through a relist: ``obj`` is the last known state (maybe None)."""

    key: str
    obj: Any  # the last known object (a dict, or a typed cache's typed object), or None


def meta_namespace_key(obj: AnyObject | DeletedFinalStateUnknown) -> str:
    """``"ns/name"`` for namespaced objects, ``"name"`` for cluster-scoped ones.

    A tombstone yields the key it carries. Raises KeyError when ``metadata.name`` is missing.
    """
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    name = meta.name(obj)
    if not name:
        raise KeyError("metadata.name")
    ns = meta.namespace(obj)
    return f"{ns}/{name}" if ns else name


# client-go's name for the key function that also accepts tombstones, which
# :func:`meta_namespace_key` already does: one function (no extra call on the cache's hot
# path), two names, so call sites read as client-go's.
deletion_handling_meta_namespace_key = meta_namespace_key


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Split a key into ``(namespace, name)``; namespace is ``""`` for cluster-scoped keys.

    Raises ValueError for keys with more than one ``/`` or an empty name.
    """
    parts = key.split("/")
    if len(parts) == 1:
        if not parts[0]:
            raise ValueError(f"invalid object key {key!r}")
        return "", parts[0]
    if len(parts) == 2 and parts[1]:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")
