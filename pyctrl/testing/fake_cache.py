"""synced_lister: a lister over a FakeClient's objects, always in sync, for unit tests.

Contract: ``synced_lister(client, Kind)`` (a kind class) returns a typed lister
(:class:`pyctrl.api.TypedLister`: ``get``, ``list``, ``by_index`` returning ``Kind``
objects); ``synced_lister(client, RESOURCE)`` a raw :class:`pyctrl.cache.Lister`. Every read
shows the client's objects as they are at that moment (what an informer over the client
shows once it has caught up), read without recording an action, so a test writes through
the client and reconciles at once: no informer threads, no waiting, no sleeps. ``indexers``
are computed on each read, as the informer's Indexer would (the namespace index is always
there). It is the lister a reconciler gets from ``builder.lister_for``, minus the watch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar, overload

from pyctrl.api import Object as Kind
from pyctrl.api import TypedLister, resource_for
from pyctrl.cache import NAMESPACE_INDEX, Indexer, Indexers, Lister, meta_namespace_index_func
from pyctrl.kube.interface import Object
from pyctrl.kube.resource import Resource
from pyctrl.kube.selectors import LabelSelector
from pyctrl.testing.fake_client import FakeClient

__all__ = ["synced_lister"]

K = TypeVar("K", bound=Kind)
_Objects = list[Object]


class _SyncedLister(Lister):
    """A Lister whose Indexer is refilled from the client before every read."""

    __slots__ = ("_client",)

    def __init__(self, client: FakeClient, resource: Resource,
                 indexers: Indexers | None) -> None:
        super().__init__(Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func,
                                           **(indexers or {})}), resource)
        self._client = client

    def _refresh(self) -> None:
        assert self.resource is not None
        self._indexer.replace(self._client.list_objects(self.resource))

    def get(self, namespace: str | None, name: str) -> Object:
        self._refresh()
        return super().get(namespace, name)

    def list(self, namespace: str | None = None,
             label_selector: str | Mapping[str, str] | LabelSelector | None = None,
             ) -> _Objects:
        self._refresh()
        return super().list(namespace, label_selector)

    def by_index(self, index: str, value: str) -> _Objects:
        self._refresh()
        return super().by_index(index, value)


@overload
def synced_lister(client: FakeClient, kind: type[K], *,
                  indexers: Indexers | None = None) -> TypedLister[K]: ...


@overload
def synced_lister(client: FakeClient, kind: Resource, *,
                  indexers: Indexers | None = None) -> Lister: ...


def synced_lister(client: FakeClient, kind: type[K] | Resource, *,
                  indexers: Indexers | None = None) -> TypedLister[K] | Lister:
    """A lister of ``kind`` over ``client``'s objects (module docstring)."""
    if isinstance(kind, Resource):
        return _SyncedLister(client, kind, indexers)
    return TypedLister(_SyncedLister(client, resource_for(kind), indexers), kind)
