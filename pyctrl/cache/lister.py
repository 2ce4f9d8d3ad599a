"""Lister: read-only access to an informer's cache, generic over what it holds.

Contract: :class:`Lister` is a :class:`typing.Protocol`, the one type every lister satisfies
(:class:`IndexerLister` over one informer's Indexer, :class:`MultiNamespaceLister`, the
Builder's ``lister_for``, ``pyctrl.testing.synced_lister``): a reconciler typed
``lister: pyctrl.Lister[Website]`` accepts any of them. A lister never calls the API server.
``get(namespace, name)`` raises :class:`pyctrl.errors.NotFound` (the same error a GET would)
when the key is not cached; ``list(namespace=None, label_selector=None)`` filters by namespace
(through the namespace index when present) and label selector; ``by_index(index, value)``
returns the objects an index function filed under ``value`` (``KeyError`` for an index the
informer does not have). Returned objects are the cache's own, shared with every other
reader. ``Lister[T]`` is generic over the object type: a raw-dict informer's lister (a
:class:`~pyctrl.kube.Resource` given to ``SharedInformerFactory.lister_for``, the default: a
bare ``Lister`` is ``Lister[dict[str, Any]]``) returns dicts, to be deep-copied before
changing them; a typed informer's (a kind class given, ``lister_for(Website)``) returns
frozen instances of that class, decoded once when they arrived, to be changed by making a
copy (:func:`pyctrl.api.replace`). Reads go through :mod:`pyctrl.kube.meta`, so both work
alike.

Read your own writes: an :class:`IndexerLister` given ``writes`` (the Manager's
:class:`~pyctrl.cache.ownwrites.OwnWrites`; the factory passes its own) first waits, bounded,
until its Indexer holds the controller's own pending writes the read covers (``get``: that
key; ``list``: those of its namespace and label selector; ``by_index`` does not wait), see
:mod:`pyctrl.cache.ownwrites`. ``namespace``/``label_selector`` are its informer's.
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
from typing import TYPE_CHECKING, Any, Generic, Protocol, cast

from pyctrl.cache.index import NAMESPACE_INDEX
from pyctrl.cache.ownwrites import OwnWrites
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

__all__ = ["IndexerLister", "Lister", "MultiNamespaceLister"]

_List = list  # inside the classes, ``list`` names the method

# What ``list`` takes as ``label_selector``: ``"a=b,c"``, ``{"a": "b"}`` or a parsed one.
_Selector = str | Mapping[str, str] | LabelSelector


class Lister(Protocol[T]):
    """What every lister offers (see module docstring)."""

    def get(self, namespace: str | None, name: str) -> T:
        """The cached object ``namespace/name`` (namespace None/"" for cluster-scoped);
        :class:`pyctrl.errors.NotFound` when it is not cached."""
        ...

    def list(self, namespace: str | None = None,
             label_selector: _Selector | None = None) -> _List[T]:
        """Cached objects in ``namespace`` (all when None) matching ``label_selector``."""
        ...

    def by_index(self, index: str, value: str) -> _List[T]:
        """Cached objects filed under ``value`` in ``index``."""
        ...


def not_found(resource: Resource | None, name: str, why: str = "") -> NotFound:
    """The NotFound a lister raises for ``name`` (what a GET would raise)."""
    what = resource.plural if resource is not None else "object"
    return NotFound(f'{what} "{name}" not found in cache{why}', 404, "NotFound",
                    {"name": name, "kind": what})


class IndexerLister(Generic[T]):
    """A :class:`Lister` reading one :class:`Indexer` (see module docstring)."""

    __slots__ = ("_indexer", "_scope", "_selector", "_writes", "resource")

    def __init__(self, indexer: Indexer, resource: Resource | None = None, *,
                 writes: OwnWrites | None = None, namespace: str | None = None,
                 label_selector: str | None = None) -> None:
        self._indexer = indexer
        self.resource = resource
        self._writes = writes if resource is not None else None
        self._scope = namespace or None
        self._selector = parse_label_selector(label_selector) if label_selector else None

    def _settle(self, key: str | None = None, namespace: str | None = None) -> None:
        writes = self._writes
        if writes is not None:
            assert self.resource is not None
            writes.settle(self.resource, self._indexer, key=key, namespace=namespace,
                          scope=self._scope, selector=self._selector)

    def get(self, namespace: str | None, name: str) -> T:
        """The cached object ``namespace/name`` (namespace None/"" for cluster-scoped)."""
        key = f"{namespace}/{name}" if namespace else name
        self._settle(key)
        obj = self._indexer.get_by_key(key)
        if obj is None:
            raise not_found(self.resource, name)
        if isinstance(obj, Quarantined):
            raise obj.error()
        return cast(T, obj)

    def list(self, namespace: str | None = None,
             label_selector: _Selector | None = None) -> _List[T]:
        """Cached objects in ``namespace`` (all when None) matching ``label_selector``."""
        selector = parse_label_selector(label_selector)
        self._settle(namespace=namespace)
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
            raise not_found(self.resource, name,
                            f": namespace {namespace!r} is not watched")
        return lister.get(namespace, name)

    def list(self, namespace: str | None = None,
             label_selector: _Selector | None = None) -> _List[T]:
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
