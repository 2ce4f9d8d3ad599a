"""synced_lister: the production cache over a FakeClient's objects, always in sync.

Contract: ``synced_lister(client, Kind)`` (a kind class) returns a ``pyctrl.Lister[Kind]``
and ``synced_lister(client, RESOURCE)`` a ``pyctrl.Lister`` of dicts: an
:class:`~pyctrl.cache.IndexerLister` over an :class:`~pyctrl.cache.Indexer`, the classes a
running manager reads through. Every read first brings the Indexer up to the client's
objects as they are at that moment (what an informer over the client holds once it has
caught up), read without recording an action, so a test writes through the client and
reconciles at once: no informer threads, no waiting, no sleeps.

It is the production cache, minus the watch: a typed lister's objects are decoded once per
resourceVersion, through the typed informer's own decoder and transform
(:class:`pyctrl.cache.typed.TypedDecoder`, :func:`~pyctrl.cache.typed.fill_type`), so an
unchanged object is the same frozen instance on every read, as in an informer; a raw lister
holds the client's dicts with ``apiVersion``/``kind`` filled and managedFields dropped, as the
factory's transform does. The indexes are the Builder's: the namespace index and the
controller-uid index (``CONTROLLER_UID_INDEX``, what ``owns`` adds), plus ``indexers``.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

from pyctrl.api import Object as Kind
from pyctrl.api import Unstructured, resource_for
from pyctrl.cache import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    IndexerLister,
    Indexers,
    controller_uid_index_func,
    drop_managed_fields,
    meta_namespace_index_func,
)
from pyctrl.cache.lister import _Selector
from pyctrl.cache.typed import TypedDecoder, fill_type
from pyctrl.kube import meta
from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import Resource
from pyctrl.testing.fake_client import FakeClient

__all__ = ["synced_lister"]

K = TypeVar("K", bound=Kind | Unstructured)
T = TypeVar("T")
_List = list


class _SyncedLister(IndexerLister[T]):
    """An IndexerLister whose Indexer catches up with the client before every read."""

    __slots__ = ("_client", "_decoder", "_fill", "_kind")

    def __init__(self, client: FakeClient, resource: Resource,
                 kind: type[Any] | None,
                 indexers: Indexers | None) -> None:
        super().__init__(Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func,
                                           CONTROLLER_UID_INDEX: controller_uid_index_func,
                                           **(indexers or {})}), resource)
        self._client = client
        self._kind = kind
        self._decoder = TypedDecoder(kind) if kind is not None else None
        self._fill = fill_type(resource,
                               retype=getattr(kind, "__metadata_only__", False) is True)

    def _refresh(self) -> None:
        assert self.resource is not None
        raws = self._client.list_objects(self.resource)
        if self._decoder is None:
            self._indexer.replace([_raw(self.resource, o) for o in raws])
            return
        have = {_identity(o): o for o in self._indexer.list()}
        fresh = [o for o in raws if _identity(o) not in have]
        decoded = iter(self._decoder.page_from_dict({"items": fresh})["items"]
                       if fresh else [])
        # Only changed objects are decoded: the rest keep their instance, as in an informer.
        self._indexer.replace([have.get(_identity(o)) or self._fill(next(decoded))
                               for o in raws])

    def get(self, namespace: str | None, name: str) -> T:
        self._refresh()
        return super().get(namespace, name)

    def list(self, namespace: str | None = None,
             label_selector: _Selector | None = None) -> _List[T]:
        self._refresh()
        return super().list(namespace, label_selector)

    def by_index(self, index: str, value: str) -> _List[T]:
        self._refresh()
        return super().by_index(index, value)


def _identity(obj: Any) -> tuple[str, str, str]:
    return meta.namespace(obj), meta.name(obj), meta.resource_version(obj)


def _raw(resource: Resource, obj: RawObject) -> RawObject:
    obj.setdefault("apiVersion", resource.api_version)
    obj.setdefault("kind", resource.kind)
    return drop_managed_fields(obj)


@overload
def synced_lister(client: FakeClient, kind: type[K], *,
                  indexers: Indexers | None = None) -> IndexerLister[K]: ...


@overload
def synced_lister(client: FakeClient, kind: Resource, *,
                  indexers: Indexers | None = None) -> IndexerLister: ...


def synced_lister(client: FakeClient, kind: type[K] | Resource, *,
                  indexers: Indexers | None = None) -> IndexerLister[K] | IndexerLister:
    """A lister of ``kind`` over ``client``'s objects (module docstring)."""
    if isinstance(kind, Resource):
        return _SyncedLister[RawObject](client, kind, None, indexers)
    return _SyncedLister[K](client, resource_for(kind), kind, indexers)
