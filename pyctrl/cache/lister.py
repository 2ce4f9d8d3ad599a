"""Lister: read-only, typed-by-convention access to an informer's cache.

Contract: a :class:`Lister` never calls the API server. ``get`` raises
:class:`pyctrl.errors.NotFound` (the same error a GET would) when the key is not cached;
``list`` filters by namespace (through the namespace index when present) and label
selector. Returned objects are the cache's own: read-only, deep-copy before mutating.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyctrl.cache.index import NAMESPACE_INDEX
from pyctrl.cache.store import Indexer
from pyctrl.errors import NotFound
from pyctrl.kube.interface import Object
from pyctrl.kube.resource import Resource
from pyctrl.kube.selectors import LabelSelector, parse_label_selector

__all__ = ["Lister"]

_Objects = list[Object]  # inside the class, ``list`` names the method


class Lister:
    """Reads from an :class:`Indexer` (see module docstring)."""

    __slots__ = ("_indexer", "resource")

    def __init__(self, indexer: Indexer, resource: Resource | None = None) -> None:
        self._indexer = indexer
        self.resource = resource

    def get(self, namespace: str | None, name: str) -> Object:
        """The cached object ``namespace/name`` (namespace None/"" for cluster-scoped)."""
        key = f"{namespace}/{name}" if namespace else name
        obj = self._indexer.get_by_key(key)
        if obj is None:
            what = self.resource.plural if self.resource is not None else "object"
            raise NotFound(f'{what} "{name}" not found in cache', 404, "NotFound",
                           {"name": name, "kind": what})
        return obj

    def list(self, namespace: str | None = None,
             label_selector: str | Mapping[str, str] | LabelSelector | None = None,
             ) -> _Objects:
        """Cached objects in ``namespace`` (all when None) matching ``label_selector``."""
        selector = parse_label_selector(label_selector)
        if namespace:
            try:
                objs = self._indexer.by_index(NAMESPACE_INDEX, namespace)
            except KeyError:
                objs = [o for o in self._indexer.list()
                        if o.get("metadata", {}).get("namespace") == namespace]
        else:
            objs = self._indexer.list()
        if selector.empty():
            return objs
        return [o for o in objs if selector.matches(o.get("metadata", {}).get("labels"))]

    def by_index(self, index: str, value: str) -> _Objects:
        """Cached objects filed under ``value`` in ``index``."""
        return self._indexer.by_index(index, value)
