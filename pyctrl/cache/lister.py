"""Lister: read-only access to an informer's cache, generic over what it holds.

Contract: a :class:`Lister` never calls the API server. ``get(namespace, name)`` raises
:class:`pyctrl.errors.NotFound` (the same error a GET would) when the key is not cached;
``list(namespace=None, label_selector=None)`` filters by namespace (through the namespace
index when present) and label selector; ``by_index(index, value)`` returns the objects an
index function filed under ``value``. Returned objects are the cache's own, shared with every
other reader. ``Lister[T]`` is generic over the object type: a raw-dict informer's lister
(a :class:`~pyctrl.kube.Resource` given to ``SharedInformerFactory.lister_for``, the default:
a bare ``Lister`` is ``Lister[dict[str, Any]]``) returns dicts, to be deep-copied before
changing them; a typed informer's (a kind class given, ``lister_for(Website)``) returns
frozen instances of that class, to be changed by making a copy
(:func:`pyctrl.api.replace`). Reads go through :mod:`pyctrl.kube.meta`, so both work alike.
A typed informer's cache may hold stand-ins for objects that did not decode into the kind
(:mod:`pyctrl.cache.quarantine`): ``get`` of such a key raises
:class:`pyctrl.errors.Undecodable` (the object's metadata and the decode error), ``list``
and ``by_index`` never return one.

:class:`MultiNamespaceLister` reads the listers of several namespaces (one informer each) as
one, with the same three methods (controller-runtime's multi-namespace cache): ``get`` and
``list(namespace)`` go to that namespace's lister (a namespace not watched holds nothing:
NotFound, ``[]``); ``list()`` and ``by_index`` concatenate, each namespace once. Under the key
``""`` it holds a lister of all namespaces (or of a cluster-scoped resource), then the only
one. :meth:`pyctrl.cache.SharedInformerFactory.lister_for` with ``namespaces=`` builds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, cast

from pyctrl.cache.index import NAMESPACE_INDEX
from pyctrl.cache.quarantine import Quarantined
from pyctrl.cache.store import Indexer
from pyctrl.errors import NotFound
from pyctrl.kube import meta
from pyctrl.kube.resource import Resource
from pyctrl.kube.selectors import LabelSelector, parse_label_selector

if TYPE_CHECKING:  # a default for type checkers only (typing.TypeVar has none before 3.13)
    from typing_extensions import TypeVar

    T = TypeVar("T", default=dict[str, Any])
else:
    from typing import TypeVar

    T = TypeVar("T")

__all__ = ["Lister", "MultiNamespaceLister"]

_List = list  # inside the classes, ``list`` names the method


class Lister(Generic[T]):
    """Reads from an :class:`Indexer` (see module docstring)."""

    __slots__ = ("_indexer", "resource")

    def __init__(self, indexer: Indexer, resource: Resource | None = None) -> None:
        self._indexer = indexer
        self.resource = resource

    def get(self, namespace: str | None, name: str) -> T:
        """The cached object ``namespace/name`` (namespace None/"" for cluster-scoped)."""
        key = f"{namespace}/{name}" if namespace else name
        obj = self._indexer.get_by_key(key)
        if obj is None:
            what = self.resource.plural if self.resource is not None else "object"
            raise NotFound(f'{what} "{name}" not found in cache', 404, "NotFound",
                           {"name": name, "kind": what})
        if isinstance(obj, Quarantined):
            raise obj.error()
        return cast(T, obj)

    def list(self, namespace: str | None = None,
             label_selector: str | Mapping[str, str] | LabelSelector | None = None,
             ) -> _List[T]:
        """Cached objects in ``namespace`` (all when None) matching ``label_selector``."""
        selector = parse_label_selector(label_selector)
        objs: _List[Any]
        if namespace:
            try:
                objs = self._indexer.by_index(NAMESPACE_INDEX, namespace)
            except KeyError:
                objs = [o for o in self._indexer.list() if meta.namespace(o) == namespace]
        else:
            objs = self._indexer.list()
        if self._indexer.quarantined:
            objs = [o for o in objs if not isinstance(o, Quarantined)]
        if selector.empty():
            return cast(_List[T], objs)
        return cast(_List[T], [o for o in objs if selector.matches(meta.labels(o))])

    def by_index(self, index: str, value: str) -> _List[T]:
        """Cached objects filed under ``value`` in ``index``."""
        found: _List[Any] = self._indexer.by_index(index, value)
        return found


class MultiNamespaceLister(Generic[T]):
    """The listers of several namespaces read as one (see module docstring)."""

    __slots__ = ("_all", "_listers", "resource")

    def __init__(self, listers: Mapping[str, Lister[T]],
                 resource: Resource | None = None) -> None:
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

    def _lister(self, namespace: str | None) -> Lister[T] | None:
        return self._all or self._listers.get(namespace or "")

    def get(self, namespace: str | None, name: str) -> T:
        """The cached object ``namespace/name`` from that namespace's lister."""
        lister = self._lister(namespace)
        if lister is None:
            what = self.resource.plural if self.resource is not None else "object"
            raise NotFound(f'{what} "{name}" not found in cache: namespace {namespace!r} is '
                           "not watched", 404, "NotFound", {"name": name, "kind": what})
        return lister.get(namespace, name)

    def list(self, namespace: str | None = None,
             label_selector: str | Mapping[str, str] | LabelSelector | None = None,
             ) -> _List[T]:
        """Cached objects in ``namespace`` (every watched one when None) matching
        ``label_selector``."""
        if namespace:
            lister = self._lister(namespace)
            return lister.list(namespace, label_selector) if lister is not None else []
        selector = parse_label_selector(label_selector)  # parsed once, not per namespace
        return [o for lister in self._listers.values() for o in lister.list(None, selector)]

    def by_index(self, index: str, value: str) -> _List[T]:
        """Cached objects filed under ``value`` in ``index``, of every namespace."""
        if self._all is not None:
            return self._all.by_index(index, value)
        return [o for lister in self._listers.values() for o in lister.by_index(index, value)]
