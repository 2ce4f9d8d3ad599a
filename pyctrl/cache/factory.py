"""SharedInformerFactory: one informer per (resource, namespace, selectors), shared.

Contract (client-go ``SharedInformerFactory``):

* ``informer_for`` returns the same :class:`SharedIndexInformer` for the same resource,
  namespace and selectors, creating it on first use with the factory's defaults (resync,
  transform, clock) and a namespace index. Extra ``indexers`` are added to it (before start).
* Cached objects carry ``apiVersion`` and ``kind``: LIST items from the apiserver omit them, so
  the factory sets the resource's on every object lacking them, before the transform. Owner
  references and events (``involvedObject``) can then be built from any cached object.
* Metadata-only informers (client-go's ``metadatainformer``, controller-runtime's
  ``OnlyMetadata``): ``informer_for(..., metadata_only=True)`` (and ``lister_for``) list and
  watch ``PartialObjectMetadata`` (see :class:`pyctrl.kube.ListOptions`): the server sends
  only each object's metadata, so bytes on the wire, decoding and the cache hold no spec or
  status. Such an informer is shared apart from the full one of the same resource and scope.
  Its cached objects are ``{"apiVersion", "kind", "metadata"}`` with the *resource's*
  apiVersion and kind (not ``meta.k8s.io/v1`` ``PartialObjectMetadata``, as
  controller-runtime sets the GVK), so keys, owner references, indexers, label selection and
  events work on them as on full objects; a server that cannot convert sends full objects,
  which are reduced to the same three fields. The factory's transform still follows.
* ``watch_list=True`` makes every informer sync by a streaming list (client-go's
  WatchListClient; see :mod:`pyctrl.cache.watchlist`) instead of paged LISTs, falling back to
  LISTs per informer when the API server cannot (one warning each). Off by default
  (client-go turned it on by default in v0.35); ``python -m bench informer --modes
  list,watch-list`` compares the two against client-go in either mode.
* ``lister_for`` reads one informer's cache through an :class:`IndexerLister`; with
  ``namespaces=[...]`` it reads one informer per namespace (each shared as above) as one
  :class:`MultiNamespaceLister` (``""`` among them: all namespaces, then the only scope;
  a cluster-scoped resource ignores namespaces). ``namespace`` is the factory's default scope.
* Typed informers: given a kind class (a :class:`pyctrl.api.Object` subclass, its Resource
  from :func:`pyctrl.api.resource_for`) instead of a Resource, ``informer_for(Website)``
  builds an informer whose LIST pages and watch events are decoded once, straight from the
  response bytes into the class, and cached as decoded: frozen objects shared without a
  copy (no mutation detector: nothing can change them), ``apiVersion``/``kind`` filled,
  managedFields and every other field the class does not declare dropped by the decoder (see
  :mod:`pyctrl.cache.typed`, which also says why writes from them must be patches, never a
  full update). ``lister_for(Website)`` is an ``IndexerLister[Website]`` (``get``, ``list``,
  ``by_index`` return typed objects; index functions receive them too). A typed informer is
  shared apart from the raw-dict one of the same resource and scope; the factory's
  ``transform`` (a dict transform) is not applied to it. Its metadata-only form is the
  class ``pyctrl.api.PartialObjectMetadata.of(resource)`` (metadata-only without being
  asked, its objects retyped as the resource's kind); ``metadata_only=True`` with any other
  kind class raises ValueError. A Resource argument keeps the raw-dict informer unchanged.
* ``own_writes`` (the Manager's :class:`~pyctrl.cache.ownwrites.OwnWrites`): every lister
  ``lister_for`` makes reads the controller's own writes (see :mod:`pyctrl.cache.ownwrites`).
* Objects that do not decode into a typed informer's kind are cached as stand-ins (see
  :mod:`pyctrl.cache.quarantine`); :meth:`undecodable` counts them per typed informer, for
  the ``pyctrl_informer_undecodable_objects`` gauge.
* ``start(stop)`` starts every informer not started yet, each in its own named thread; call it
  again after requesting more informers. ``wait_for_cache_sync`` waits for the started ones.
* ``shutdown()`` sets the factory's own stop signal for all informers and joins every thread
  it started; ``stop`` passed to ``start`` also stops them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from pyctrl.api.typed import resource_for
from pyctrl.cache.delta_fifo import TransformFunc
from pyctrl.cache.index import NAMESPACE_INDEX, Indexers, meta_namespace_index_func
from pyctrl.cache.informer import SharedIndexInformer
from pyctrl.cache.lister import IndexerLister, MultiNamespaceLister
from pyctrl.cache.listwatch import ListerWatcher, ListWatch
from pyctrl.cache.mutation import drop_managed_fields
from pyctrl.cache.ownwrites import OwnWrites
from pyctrl.cache.typed import TypedListWatch, fill_type
from pyctrl.clock import Clock, RealClock
from pyctrl.kube.interface import Client, RawObject
from pyctrl.kube.resource import Resource

__all__ = ["SharedInformerFactory"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Key:
    resource: Resource
    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    metadata_only: bool = False
    kind_class: type | None = None  # a typed informer's kind


class SharedInformerFactory:
    """Creates, shares, starts and stops informers (see module docstring)."""

    def __init__(self, client: Client, *, default_resync: float = 0.0,
                 namespace: str | None = None, clock: Clock | None = None,
                 transform: TransformFunc | None = drop_managed_fields,
                 page_size: int = 500, watch_list: bool = False,
                 own_writes: OwnWrites | None = None) -> None:
        self._client = client
        self.own_writes = own_writes
        self._default_resync = default_resync
        self._namespace = namespace
        self._clock: Clock = clock or RealClock()
        self._transform = transform
        self._page_size = page_size
        self._watch_list = watch_list
        self._lock = threading.Lock()
        self._informers: dict[_Key, SharedIndexInformer] = {}
        self._started: dict[_Key, threading.Thread] = {}
        self._stop = threading.Event()
        self._shutting_down = False

    def informer_for(self, resource: Resource | type[Any], *, namespace: str | None = None,
                     label_selector: str | None = None, field_selector: str | None = None,
                     resync: float | None = None, indexers: Indexers | None = None,
                     metadata_only: bool = False) -> SharedIndexInformer:
        """The shared informer for this resource (or kind class: a typed informer) and
        scope/selectors (created on first use); ``metadata_only``: one caching only the
        objects' metadata (see module docstring)."""
        resource, kind_class = _resource_of(resource)
        lean = getattr(kind_class, "__metadata_only__", False) is True
        if kind_class is not None and metadata_only and not lean:
            raise ValueError("a typed informer has no metadata-only form: pass the Resource "
                             "or pyctrl.api.PartialObjectMetadata.of(resource)")
        metadata_only = metadata_only or lean
        ns = namespace if namespace is not None else self._namespace
        if not resource.namespaced:
            ns = None
        key = _Key(resource, ns or None, label_selector or None, field_selector or None,
                   metadata_only, kind_class)
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                lw: ListerWatcher = ListWatch(
                    self._client, resource, key.namespace, key.label_selector,
                    key.field_selector, metadata_only=metadata_only)
                if kind_class is not None:
                    lw = TypedListWatch(lw, kind_class)
                    transform: TransformFunc = fill_type(resource, retype=lean)
                else:
                    typed = _as_metadata if metadata_only else _with_type
                    transform = typed(resource, self._transform)
                informer = SharedIndexInformer(
                    lw,
                    resync_period=self._default_resync if resync is None else resync,
                    indexers={NAMESPACE_INDEX: meta_namespace_index_func},
                    transform=transform, clock=self._clock,
                    name=_informer_name(key), page_size=self._page_size,
                    watch_list=self._watch_list,
                    # Frozen objects cannot be changed in place: nothing to detect.
                    detect_mutations=False if kind_class is not None else None,
                )
                self._informers[key] = informer
            if indexers:
                existing = informer.get_indexer().get_indexers()
                new = {n: f for n, f in indexers.items() if n not in existing}
                if new:
                    informer.add_indexers(new)
            return informer

    @property
    def namespace(self) -> str | None:
        """The namespace informers watch unless told otherwise (None: all)."""
        return self._namespace

    @overload
    def lister_for(self, resource: Resource, *, namespace: str | None = None,
                   label_selector: str | None = None, field_selector: str | None = None,
                   indexers: Indexers | None = None,
                   metadata_only: bool = False) -> IndexerLister: ...

    @overload
    def lister_for(self, resource: Resource, *, namespaces: Iterable[str],
                   label_selector: str | None = None, field_selector: str | None = None,
                   indexers: Indexers | None = None,
                   metadata_only: bool = False) -> MultiNamespaceLister: ...

    @overload
    def lister_for(self, resource: type[T], *, namespace: str | None = None,
                   label_selector: str | None = None, field_selector: str | None = None,
                   indexers: Indexers | None = None) -> IndexerLister[T]: ...

    @overload
    def lister_for(self, resource: type[T], *, namespaces: Iterable[str],
                   label_selector: str | None = None, field_selector: str | None = None,
                   indexers: Indexers | None = None) -> MultiNamespaceLister[T]: ...

    def lister_for(self, resource: Resource | type[Any], *, namespace: str | None = None,
                   namespaces: Iterable[str] | None = None,
                   label_selector: str | None = None, field_selector: str | None = None,
                   indexers: Indexers | None = None,
                   metadata_only: bool = False,
                   ) -> IndexerLister[Any] | MultiNamespaceLister[Any]:
        """A Lister over the shared informer for these arguments (a ``Lister[cls]`` of typed
        objects for a kind class); with ``namespaces``, one MultiNamespaceLister over the
        shared informer of each (see module docstring)."""
        res, _ = _resource_of(resource)

        def one(ns: str | None) -> IndexerLister[Any]:
            informer = self.informer_for(resource, namespace=ns,
                                         label_selector=label_selector,
                                         field_selector=field_selector, indexers=indexers,
                                         metadata_only=metadata_only)
            scope = ns if ns is not None else self._namespace
            return IndexerLister(informer.get_indexer(), res, writes=self.own_writes,
                                 namespace=scope if res.namespaced else None,
                                 label_selector=label_selector)

        if namespaces is None:
            return one(namespace)
        if namespace is not None:
            raise ValueError("pass namespace or namespaces, not both")
        scopes = list(dict.fromkeys(namespaces))
        if not scopes:
            raise ValueError("namespaces must name at least one namespace")
        if "" in scopes or not res.namespaced:
            scopes = [""]
        return MultiNamespaceLister({ns: one(ns) for ns in scopes}, res)

    def start(self, stop: threading.Event) -> None:
        """Start every informer not started yet, each in a named thread."""
        with self._lock:
            if self._shutting_down:
                raise RuntimeError("informer factory is shut down")
            for key, informer in self._informers.items():
                if key in self._started:
                    continue
                t = threading.Thread(target=self._run_informer, args=(informer, stop),
                                     name=f"informer-{informer.name}", daemon=True)
                self._started[key] = t
                t.start()

    def _run_informer(self, informer: SharedIndexInformer, stop: threading.Event) -> None:
        # The informer stops on either the caller's stop or shutdown().
        both = threading.Event()
        watcher = threading.Thread(target=_any_of, args=(stop, self._stop, both),
                                   name=f"{informer.name}-stopper", daemon=True)
        watcher.start()
        try:
            informer.run(both)
        finally:
            both.set()
            watcher.join()

    def wait_for_cache_sync(self, stop: threading.Event, timeout: float | None = None) -> bool:
        """Wait for every started informer to sync; False on stop, shutdown or timeout."""
        with self._lock:
            informers = [self._informers[k] for k in self._started]
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        for informer in informers:
            remaining = None
            if deadline is not None:
                remaining = max(0.0, deadline - self._clock.monotonic())
            if not informer.wait_for_sync(stop, remaining):
                return False
        return True

    def informers(self) -> list[SharedIndexInformer]:
        with self._lock:
            return list(self._informers.values())

    def undecodable(self) -> list[tuple[str, str, int]]:
        """``(resource, kind, stand-ins cached)`` for every typed informer (``resource`` is
        ``plural.group``)."""
        with self._lock:
            typed = [(k.resource, i) for k, i in self._informers.items() if k.kind_class]
        return [(r.plural + (f".{r.group}" if r.group else ""), r.kind,
                 i.get_indexer().quarantined) for r, i in typed]

    def resources(self) -> list[Resource]:
        """The resources informers were made for, each once, in creation order."""
        with self._lock:
            return list(dict.fromkeys(key.resource for key in self._informers))

    def shutdown(self) -> None:
        """Stop all informers started by this factory and join their threads."""
        with self._lock:
            self._shutting_down = True
            threads = list(self._started.values())
        self._stop.set()
        for t in threads:
            t.join()


def _with_type(resource: Resource, transform: TransformFunc | None) -> TransformFunc:
    """``transform`` preceded by filling ``apiVersion``/``kind`` from ``resource``."""
    api_version, kind = resource.api_version, resource.kind

    def typed(obj: RawObject) -> RawObject:
        # Mutates the freshly decoded object, as transforms do (never a cached one).
        if not obj.get("kind"):
            obj["kind"] = kind
        if not obj.get("apiVersion"):
            obj["apiVersion"] = api_version
        return transform(obj) if transform is not None else obj

    return typed


def _as_metadata(resource: Resource, transform: TransformFunc | None) -> TransformFunc:
    """``transform`` preceded by retyping a metadata-only object as ``resource``'s (a full
    object from a server that could not convert is reduced to its metadata)."""
    api_version, kind = resource.api_version, resource.kind

    def typed(obj: RawObject) -> RawObject:
        meta = {"apiVersion": api_version, "kind": kind, "metadata": obj.get("metadata") or {}}
        return transform(meta) if transform is not None else meta

    return typed


def _any_of(a: threading.Event, b: threading.Event, out: threading.Event) -> None:
    # Event has no select(); poll both at a coarse real-time interval (stop latency only).
    while not out.is_set():
        if a.wait(0.05) or b.is_set():
            out.set()


def _informer_name(key: _Key) -> str:
    name = key.resource.plural
    if key.namespace:
        name += f"@{key.namespace}"
    if key.label_selector:
        name += f"[{key.label_selector}]"
    if key.metadata_only:
        name += ":metadata"
    if key.kind_class is not None:
        name += ":typed"
    return name


def _resource_of(arg: Resource | type[Any]) -> tuple[Resource, type[Any] | None]:
    """The Resource of an informer_for/lister_for argument, and the kind class if typed."""
    if isinstance(arg, Resource):
        return arg, None
    return resource_for(arg), arg
