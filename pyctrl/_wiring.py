"""What a controller's declarations resolve to: the base of :class:`pyctrl.builder.Builder`.

Contract: a :class:`Wiring` holds what its Builder was told (watches, indexes, namespaces,
queue options, RBAC) and answers which shared informers each watch and each reader uses:
one per namespace (the Builder's, else the manager's; ``""`` for a cluster-scoped resource
or a manager watching all), with the label selector of the resource's ``for_`` watch (else
its first watch; joined with the controller hooks' selectors), that watch's
``metadata_only``, and the indexers (the controller-UID index for an ``owns`` resource, then
the declared ones). A resource keeps the form of its first declaration or reader within a
controller (a kind class: typed informers; a Resource: raw-dict informers; the other form
raises ValueError); a declaration that would move readers already handed out to other
informers is undone and raises ValueError. The readers (``lister_for``, ``reader_for``,
``informers_for``) are public on the Builder; the rules users see are in
:mod:`pyctrl.builder`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from pyctrl.api.typed import resource_for
from pyctrl.api.types import Object as Kind
from pyctrl.api.unstructured import Unstructured
from pyctrl.cache import (
    CONTROLLER_UID_INDEX,
    DeletedFinalStateUnknown,
    Indexers,
    MultiNamespaceLister,
    SharedIndexInformer,
    controller_uid_index_func,
)
from pyctrl.controller import Controller
from pyctrl.extension import ControllerHost
from pyctrl.handlers import MapFunc, Predicate
from pyctrl.kube.resource import Resource
from pyctrl.rbac import PolicyRule
from pyctrl.reconcile import Request
from pyctrl.record import EventRecorder
from pyctrl.workqueue import RateLimiter

__all__ = ["DeleteObserver", "K", "T", "Watch", "Wiring", "split"]

K = TypeVar("K", bound=Kind | Unstructured)
T = TypeVar("T")  # what a watch's handlers see: a kind's objects, or dicts

DeleteObserver = Callable[[T | DeletedFinalStateUnknown], None]
"""``on_delete``: called with each deleted object (``T``: the kind's objects for a kind
class, dicts for a Resource) or the tombstone of one."""


def split(what: Resource | type[Any]) -> tuple[Resource, type[Kind] | None]:
    """The Resource of a declaration, and its kind class when it is one."""
    return (what, None) if isinstance(what, Resource) else (resource_for(what), what)


@dataclass(frozen=True)
class Watch:
    resource: Resource
    kind: str  # "for" | "owns" | "map"
    mapper: MapFunc | None
    predicates: tuple[Predicate, ...]
    label_selector: str | None
    on_delete: DeleteObserver[Any] | None
    metadata_only: bool = False


class Wiring:
    """The declarations of one controller and the informers they resolve to (see module
    docstring); :class:`pyctrl.builder.Builder` adds the declaring and the building."""

    def __init__(self, manager: ControllerHost, name: str, *, workers: int = 1) -> None:
        if not name:
            raise ValueError("a controller needs a name")
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self._manager = manager
        self._hooks = manager.controller_hooks  # from here on, no extension goes in
        self._controller: Controller[Request] | None = None
        self._name = name
        self._workers = workers
        self._for: Resource | None = None
        self._watches: list[Watch] = []
        self._filters: list[Predicate] = []
        self._rate_limiter: RateLimiter | None = None
        self._priority_queue = False
        self._recorder: EventRecorder | None = None
        self._namespaces: tuple[str, ...] | None = None
        # resource -> its kind class (typed informers) or None (raw-dict informers)
        self._forms: dict[Resource, type[Kind] | None] = {}
        # resource -> (selector, metadata_only) of the readers handed out
        self._read: dict[Resource, tuple[str | None, bool]] = {}
        self._completed = False
        self._owned_writes: dict[Resource, tuple[str, ...]] = {}
        self._indexes: dict[Resource, Indexers] = {}
        self._rbac_rules: list[PolicyRule] = []
        self._writes_status: bool | None = None

    @property
    def name(self) -> str:
        """The controller's name."""
        return self._name

    @property
    def completed(self) -> bool:
        """Whether :meth:`complete` built the controller (False before, or after it
        raised)."""
        return self._completed

    @property
    def for_resource(self) -> Resource | None:
        """The resource given to ``for_`` (None before, or without one)."""
        return self._for

    @property
    def owned_resources(self) -> tuple[Resource, ...]:
        """The resources given to ``owns`` so far, in order."""
        return tuple(dict.fromkeys(w.resource for w in self._watches if w.kind == "owns"))


    @overload
    def lister_for(self, resource: Resource) -> MultiNamespaceLister: ...

    @overload
    def lister_for(self, resource: type[K]) -> MultiNamespaceLister[K]: ...

    def lister_for(self, resource: Resource | type[K]
                   ) -> MultiNamespaceLister | MultiNamespaceLister[K]:
        """One lister over the informers this controller watches ``resource`` with: of
        ``Kind`` objects for a kind class, of dicts for a Resource (ValueError when the
        resource is declared here in the other form)."""
        res, kind_class = split(resource)
        self._claim(res, kind_class)
        return self.reader_for(res)

    def reader_for(self, resource: Resource) -> MultiNamespaceLister[Any]:
        """:meth:`lister_for` in the form ``resource`` is declared in here (typed objects
        for a kind class, dicts otherwise): for code that reads whatever the controller
        watches through :mod:`pyctrl.kube.meta`, such as controller hooks."""
        kind_class = self._claim(resource, self._forms.get(resource))
        selector, metadata = self._read[resource] = self._reader_of(resource)
        factory, namespaces = self._manager.informers, self._scopes(resource)
        indexers = self._indexers(resource)
        if kind_class is not None:
            return factory.lister_for(kind_class, namespaces=namespaces,
                                      label_selector=selector, indexers=indexers)
        return factory.lister_for(resource, namespaces=namespaces, label_selector=selector,
                                  indexers=indexers, metadata_only=metadata)

    def informers_for(self, resource: Resource | type[Kind]) -> list[SharedIndexInformer]:
        """The shared informers (one per namespace) this controller watches ``resource``
        with, as :meth:`lister_for` reads them (a Resource: in the form declared here)."""
        res, kind_class = split(resource)
        kind_class = self._claim(res, kind_class or self._forms.get(res))
        selector, metadata = self._read[res] = self._reader_of(res)
        return self._informers_of(res, kind_class, selector, self._indexers(res), metadata)

    # -- resolution: which informers a watch (or a reader) uses ------------------------
    def _claim(self, resource: Resource, kind_class: type[Kind] | None) -> type[Kind] | None:
        """Fix the form of ``resource`` in this controller (module docstring)."""
        form = self._forms.setdefault(resource, kind_class)
        if form is not kind_class:
            declared = form.__name__ if form is not None else f"the Resource {resource}"
            raise ValueError(
                f"controller {self._name} declares {resource.plural} as {declared}: declare "
                "and read it in one form (a kind class or its Resource) within a controller")
        return form

    def _declare(self, what: Resource | type[Any], kind: str, mapper: MapFunc | None,
                 predicates: Sequence[Predicate], label_selector: str | None,
                 on_delete: DeleteObserver[Any] | None, metadata_only: bool) -> Resource:
        resource, kind_class = split(what)
        if kind_class is not None and metadata_only:
            raise ValueError(f"metadata_only watches dicts: pass {kind_class.__name__}'s "
                             "Resource, not the kind class")
        claimed = resource in self._forms
        self._claim(resource, kind_class)
        self._watches.append(Watch(resource, kind, mapper, tuple(predicates), label_selector,
                                    on_delete, metadata_only))
        moved = [r for r, read in self._read.items() if self._reader_of(r) != read]
        if moved:
            self._watches.pop()
            if not claimed:
                del self._forms[resource]
            raise ValueError(f"declare {moved[0]} before lister_for/informers_for: its "
                             "readers were handed out for another label selector or "
                             "metadata_only")
        return resource

    def _scopes(self, resource: Resource) -> tuple[str, ...]:
        # "" is every namespace (cluster-scoped resources, or a manager watching all).
        if not resource.namespaced:
            return ("",)
        return self._namespaces or (self._manager.informers.namespace or "",)

    def _watch_selector(self, watch: Watch) -> str | None:
        selectors = [watch.label_selector or None]
        if watch.kind == "for":
            selectors += [hook.for_selector(self) for hook in self._hooks]
        elif watch.kind == "owns":
            selectors += [hook.owned_selector(self, watch.resource) for hook in self._hooks]
        return ",".join(s for s in selectors if s) or None

    def _reader_of(self, resource: Resource) -> tuple[str | None, bool]:
        """The label selector and metadata_only of the watch readers of ``resource`` follow."""
        watches = [w for w in self._watches if w.resource == resource]
        watches.sort(key=lambda w: w.kind != "for")  # stable: the for_, else the first
        if not watches:
            return None, False
        return self._watch_selector(watches[0]), watches[0].metadata_only

    def _indexers(self, resource: Resource) -> Indexers | None:
        owned = any(w.kind == "owns" and w.resource == resource for w in self._watches)
        indexers = {CONTROLLER_UID_INDEX: controller_uid_index_func} if owned else {}
        return {**indexers, **self._indexes.get(resource, {})} or None

    def _informers_of(self, resource: Resource, kind_class: type[Kind] | None,
                      selector: str | None, indexers: Indexers | None,
                      metadata_only: bool) -> list[SharedIndexInformer]:
        factory = self._manager.informers
        return [factory.informer_for(kind_class or resource, namespace=ns,
                                     label_selector=selector, indexers=indexers,
                                     metadata_only=metadata_only)
                for ns in self._scopes(resource)]

    def _informers(self, watch: Watch) -> list[SharedIndexInformer]:
        indexers = self._indexers(watch.resource)
        return self._informers_of(watch.resource, self._forms[watch.resource],
                                  self._watch_selector(watch), indexers, watch.metadata_only)

