"""Lister: read-only, typed-by-convention access to an informer's cache.

Contract: a :class:`Lister` never calls the API server. ``get`` raises
:class:`pyctrl.errors.NotFound` (the same error a GET would) when the key is not cached;
``list`` filters by namespace (through the namespace index when present) and label
selector. Returned objects are the cache's own: read-only, deep-copy before mutating.

:class:`MultiNamespaceLister` reads the listers of several namespaces (one informer each) as
one, with the same three methods (controller-runtime's multi-namespace cache): ``get`` and
``list(namespace)`` go to that namespace's lister (a namespace not watched holds nothing:
NotFound, ``[]``); ``list()`` and ``by_index`` concatenate, each namespace once. Under the key
``""`` it holds a lister of all namespaces (or of a cluster-scoped resource), then the only
one. :meth:`pyctrl.cache.SharedInformerFactory.lister_for` with ``namespaces=`` builds it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyctrl.cache.index import NAMESPACE_INDEX
from pyctrl.cache.store import Indexer
from pyctrl.errors import NotFound
from pyctrl.kube.interface import Object
from pyctrl.kube.resource import Resource
from pyctrl.kube.selectors import LabelSelector, parse_label_selector

__all__ = ["Lister", "MultiNamespaceLister"]

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


class MultiNamespaceLister:
    """The listers of several namespaces read as one (see module docstring)."""

    __slots__ = ("_all", "_listers", "resource")

    def __init__(self, listers: Mapping[str, Lister], resource: Resource | None = None) -> None:
        if not listers:
            raise ValueError("a MultiNamespaceLister needs at least one lister")
        if "" in listers and len(listers) > 1:
            raise ValueError("an all-namespaces lister cannot be merged with namespaced ones")
        self._listers = dict(listers)
        self._all = self._listers.get("")
        self.resource = resource

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces read (``("",)``: all of them, or a cluster-scoped resource)."""
        return tuple(self._listers)

    def _lister(self, namespace: str | None) -> Lister | None:
        return self._all or self._listers.get(namespace or "")

    def get(self, namespace: str | None, name: str) -> Object:
        """The cached object ``namespace/name`` from that namespace's lister."""
        lister = self._lister(namespace)
        if lister is None:
            what = self.resource.plural if self.resource is not None else "object"
            raise NotFound(f'{what} "{name}" not found in cache: namespace {namespace!r} is '
                           "not watched", 404, "NotFound", {"name": name, "kind": what})
        return lister.get(namespace, name)

    def list(self, namespace: str | None = None,
             label_selector: str | Mapping[str, str] | LabelSelector | None = None,
             ) -> _Objects:
        """Cached objects in ``namespace`` (every watched one when None) matching
        ``label_selector``."""
        if namespace:
            lister = self._lister(namespace)
            return lister.list(namespace, label_selector) if lister is not None else []
        selector = parse_label_selector(label_selector)  # parsed once, not per namespace
        return [o for lister in self._listers.values() for o in lister.list(None, selector)]

    def by_index(self, index: str, value: str) -> _Objects:
        """Cached objects filed under ``value`` in ``index``, of every namespace."""
        if self._all is not None:
            return self._all.by_index(index, value)
        return [o for lister in self._listers.values() for o in lister.by_index(index, value)]
