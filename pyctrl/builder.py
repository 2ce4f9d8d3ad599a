"""Builder: wire a controller's informers, handlers, queue and reconciler in one chain.

Contract (controller-runtime's ``pkg/builder``, in threads)::

    manager.controller("foo", workers=2).for_(FOOS).owns(DEPLOYMENTS) \\
        .watches(CONFIGMAPS, mapper).with_event_filter(pred).complete(reconciler)

* The reconcile contract is :mod:`pyctrl.reconcile`'s (``Request``, ``Result``,
  ``Reconciler``). :meth:`Builder.complete` takes an object with
  ``reconcile(request)`` or a plain function ``fn(request)``; the controller's queue holds
  :class:`~pyctrl.reconcile.Request` values, handed to the reconciler as they are (the
  :class:`~pyctrl.controller.Controller` outcome rules apply).
* Every watch is one :class:`pyctrl.handlers.MapHandler` (predicates, mapper, priority, error
  guard in one place). ``for_(resource)`` enqueues each object's own Request.
  ``owns(resource)`` adds the controller-UID index to that resource's shared informer and
  enqueues the Request of each object's controller owner whose group/kind is the ``for_``
  resource's. ``watches(resource, mapper)`` enqueues every Request ``mapper(obj)`` returns
  (for an update, of both the old and the new object; a deleted object's last known state).
  A mapper that raises drops that event (logged).
* ``metadata_only=True`` (on ``for_``, ``owns`` or ``watches``; controller-runtime's
  ``OnlyMetadata``) watches that resource through a metadata-only informer (see
  :mod:`pyctrl.cache.factory`): handlers, and ``lister_for``/``informers_for`` when that
  watch is the one they follow, see objects with only ``apiVersion``, ``kind`` and
  ``metadata``. Owner references, labels and names are all ``owns`` and the usual mappers
  need; a reconciler that reads the spec or status of that resource needs a full watch.
* ``with_event_filter(*predicates)`` applies to every watch; ``predicates=`` on one watch only.
  All predicates must pass (see :mod:`pyctrl.handlers`).
* ``on_delete=observer`` (on ``for_``, ``owns`` or ``watches``) sees every delete
  notification of that watch (of an ``owns`` watch, only those whose owner the hooks'
  ``admit_owner`` lets through: an owner another replica took over is not this one's
  to observe), as the informer delivered it (the object, or a
  :class:`~pyctrl.cache.DeletedFinalStateUnknown` tombstone), before the watch's predicates
  and enqueue: the reconcile that follows can rely on what the observer recorded, such as a
  deleted child's final state the cache no longer holds (controller-runtime users write this
  as a ``DeleteFunc`` in a custom handler). An observer that raises is logged; the enqueue
  still happens.
* ``with_options(rate_limiter=..., namespaces=..., priority_queue=...)``: the queue's rate
  limiter; the namespaces watched (one shared informer per namespace for namespaced
  resources; default: the manager's scope; cluster-scoped resources ignore namespaces);
  ``priority_queue=True`` gives the controller a :class:`~pyctrl.workqueue.PriorityQueue`
  (initial-list and resync events at low priority, with aging; see :mod:`pyctrl.handlers`).
* ``lister_for(resource)`` / ``informers_for(resource)``: what a reconciler reads, over
  exactly the informers this controller watches ``resource`` with: one per namespace,
  merged into one :class:`~pyctrl.cache.MultiNamespaceLister`; the label selector of that
  resource's ``for_`` (with the hooks' selectors) or else of its first declared watch; an owned
  resource's controller-UID index (present by ``complete``). A resource not declared is read
  whole in the controller's namespaces. Call them after ``with_options(namespaces=...)`` and
  after declaring the resource's watches: a later change that would move them to other
  informers (other namespaces, another selector) raises ValueError.
* Queue, clock and metrics registry come from the manager (so fake time and metrics are never
  lost by forgetting an argument); recorders come from ``manager.event_recorder(name)``.
  :meth:`complete` builds the :class:`Controller` (waiting for every informer it watches),
  registers it with the manager and returns it. A Builder completes once; it must complete
  before ``Manager.run``. A Builder that never completed builds nothing: ``Manager.run``
  logs a warning naming each one (:attr:`completed`), the usual cause being a chain that
  forgot its final ``.complete(reconciler)``.
* Kinds: ``for_``, ``owns``, ``watches``, ``lister_for`` and ``informers_for`` take a kind
  class (a :class:`pyctrl.api.Object` subclass, yours or a built-in one) wherever they take a
  Resource: the Resource (and so the RBAC rule) is :func:`pyctrl.api.resource_for` of it.
  ``lister_for(Kind)`` reads the same informers typed: ``get``/``list`` return ``Kind``
  objects (decoded from the cached dicts by :func:`typed_lister`, the one place that changes
  when the informers cache typed objects themselves). Hand it to
  :func:`pyctrl.with_object` to give the reconciler the cached object with the Request.
* RBAC (``python -m pyctrl gen rbac``, :mod:`pyctrl.rbac`): ``owns(..., writes=(...))`` the
  verbs the reconciler uses on an owned kind (default create, update, patch, delete);
  ``rbac(*rules, status=...)`` what the declarations cannot show; :meth:`rbac_declared` is
  what the generator reads. Nothing of it changes how the controller runs.
* Controller hooks (:mod:`pyctrl._extension`, added by Manager extensions) are asked about
  each controller: a label selector added to its ``for_`` informers (and, from a hook with
  ``owned_selector(build, resource)``, to its ``owns`` informers of that resource), a filter
  on the owners ``owns`` enqueues, and a wrapper around its reconciler. :attr:`name` and
  :attr:`for_resource` are what they see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, overload

import structlog

from pyctrl.api.typed import TypedLister, resource_for
from pyctrl.api.types import Object as Kind
from pyctrl.cache import (
    CONTROLLER_UID_INDEX,
    DeletedFinalStateUnknown,
    Indexers,
    MultiNamespaceLister,
    ResourceEventHandler,
    SharedIndexInformer,
    controller_uid_index_func,
)
from pyctrl.controller import Controller
from pyctrl.handlers import (
    MapFunc,
    Predicate,
    Queue,
    enqueue_object,
    enqueue_owner,
    enqueue_requests,
)
from pyctrl.kube.interface import Object
from pyctrl.kube.resource import Resource
from pyctrl.rbac import DEFAULT_OWNED_WRITES, Declared, PolicyRule
from pyctrl.reconcile import ReconcileFunc, Reconciler, Request, as_reconciler
from pyctrl.workqueue import PriorityQueue, RateLimiter

if TYPE_CHECKING:
    from pyctrl.manager import Manager

__all__ = ["Builder", "DeleteObserver", "MapFunc", "typed_lister"]

K = TypeVar("K", bound=Kind)
KindOrResource = Resource | type[Kind]


def _resource(what: KindOrResource) -> Resource:
    return what if isinstance(what, Resource) else resource_for(what)


def typed_lister(lister: MultiNamespaceLister, kind: type[K]) -> TypedLister[K]:
    """``lister``'s objects as ``kind``: each read decodes the cached dict.

    Not the factory's typed ``lister_for(kind)`` (yet): that reads a typed informer of its
    own, apart from the raw-dict one this controller's watches enqueue from, so a Request
    could be read before the typed cache has its object (and :func:`pyctrl.with_object`
    would skip it). Swapping needs the watches declared with a kind class on typed informers
    too (their handlers, mappers, delete observers and controller hooks then see typed
    objects)."""
    return TypedLister(lister, kind)

log = structlog.get_logger(__name__)

DeleteObserver = Callable[[Object | DeletedFinalStateUnknown], None]


class _ObserveDeletes:
    """Hands each delete notification to ``observer`` first (only when ``gate`` passes the
    last known state), then to ``inner``."""

    def __init__(self, inner: ResourceEventHandler, observer: DeleteObserver,
                 gate: Callable[[Object], bool] | None = None) -> None:
        self._inner = inner
        self._observer = observer
        self._gate = gate

    def on_add(self, obj: Object, is_in_initial_list: bool) -> None:
        self._inner.on_add(obj, is_in_initial_list)

    def on_update(self, old: Object, new: Object) -> None:
        self._inner.on_update(old, new)

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        try:
            last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if self._gate is None or last is None or self._gate(last):
                self._observer(obj)
        except Exception:  # never raise into the informer; the enqueue still matters
            log.exception("delete observer failed")
        self._inner.on_delete(obj)


@dataclass(frozen=True)
class _Watch:
    resource: Resource
    kind: str  # "for" | "owns" | "map"
    mapper: MapFunc | None
    predicates: tuple[Predicate, ...]
    label_selector: str | None
    on_delete: DeleteObserver | None
    metadata_only: bool = False


class Builder:
    """Collects what a controller watches, then builds it (see module docstring)."""

    def __init__(self, manager: Manager, name: str, *, workers: int = 1) -> None:
        if not name:
            raise ValueError("a controller needs a name")
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self._manager = manager
        self._name = name
        self._workers = workers
        self._for: Resource | None = None
        self._watches: list[_Watch] = []
        self._filters: list[Predicate] = []
        self._rate_limiter: RateLimiter | None = None
        self._priority_queue = False
        self._namespaces: tuple[str, ...] | None = None
        # resource -> (selector, metadata_only) of the readers handed out
        self._read: dict[Resource, tuple[str | None, bool]] = {}
        self._completed = False
        self._owned_writes: dict[Resource, tuple[str, ...]] = {}
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

    def for_(self, resource: KindOrResource, *, predicates: Sequence[Predicate] = (),
             label_selector: str | None = None,
             on_delete: DeleteObserver | None = None, metadata_only: bool = False) -> Builder:
        """Reconcile ``resource`` (or a kind class): each object's own key is enqueued."""
        resource = _resource(resource)
        if self._for is not None:
            raise ValueError(f"for_ already set to {self._for}")
        self._add(_Watch(resource, "for", None, tuple(predicates), label_selector, on_delete,
                         metadata_only))
        self._for = resource
        return self

    def owns(self, resource: KindOrResource, *, predicates: Sequence[Predicate] = (),
             label_selector: str | None = None,
             on_delete: DeleteObserver | None = None, metadata_only: bool = False,
             writes: Sequence[str] = DEFAULT_OWNED_WRITES) -> Builder:
        """Enqueue the ``for_`` owner (controller reference) of each ``resource`` object.
        ``writes``: the verbs the reconciler uses on ``resource`` (for ``gen rbac``)."""
        resource = _resource(resource)
        self._owned_writes[resource] = (*self._owned_writes.get(resource, ()), *writes)
        self._add(_Watch(resource, "owns", None, tuple(predicates), label_selector, on_delete,
                         metadata_only))
        return self

    def watches(self, resource: KindOrResource, mapper: MapFunc, *,
                predicates: Sequence[Predicate] = (),
                label_selector: str | None = None,
                on_delete: DeleteObserver | None = None,
                metadata_only: bool = False) -> Builder:
        """Enqueue every Request ``mapper(obj)`` returns for each ``resource`` event."""
        resource = _resource(resource)
        self._add(_Watch(resource, "map", mapper, tuple(predicates), label_selector, on_delete,
                         metadata_only))
        return self

    def rbac(self, *rules: PolicyRule, status: bool | None = None) -> Builder:
        """Permissions the declarations cannot show, for ``python -m pyctrl gen rbac``
        (:mod:`pyctrl.rbac`); ``status=False``: the reconciler never writes the ``for_``
        kind's status (default: it does when the kind has a status subresource)."""
        self._rbac_rules.extend(rules)
        if status is not None:
            self._writes_status = status
        return self

    def rbac_declared(self) -> Declared:
        """What this controller declared, as :func:`pyctrl.rbac.derive` reads it."""
        watched = {w.resource for w in self._watches}
        return Declared(
            controller=self._name, for_=self._for,
            owns={w.resource: self._owned_writes.get(w.resource, ())
                  for w in self._watches if w.kind == "owns"},
            watches=tuple(dict.fromkeys(w.resource for w in self._watches if w.kind == "map")),
            reads=tuple(r for r in self._read if r not in watched),
            rules=tuple(self._rbac_rules), status=self._writes_status)

    def with_event_filter(self, *predicates: Predicate) -> Builder:
        """Predicates every watch of this controller must pass."""
        self._filters.extend(predicates)
        return self

    def with_options(self, *, rate_limiter: RateLimiter | None = None,
                     namespaces: Iterable[str] | None = None,
                     priority_queue: bool | None = None) -> Builder:
        """The queue's rate limiter; the namespaces to watch (default: the manager's);
        whether the queue is a PriorityQueue."""
        if namespaces is not None:
            ns = tuple(dict.fromkeys(namespaces))
            if not ns or any(not n for n in ns):
                raise ValueError("namespaces must be non-empty names")
            if self._read and ns != self._namespaces:
                raise ValueError("set namespaces before lister_for/informers_for: the "
                                 "readers handed out would read other informers")
            self._namespaces = ns
        if rate_limiter is not None:
            self._rate_limiter = rate_limiter
        if priority_queue is not None:
            self._priority_queue = priority_queue
        return self

    @overload
    def lister_for(self, resource: Resource) -> MultiNamespaceLister: ...

    @overload
    def lister_for(self, resource: type[K]) -> TypedLister[K]: ...

    def lister_for(self, resource: Resource | type[K]) -> MultiNamespaceLister | TypedLister[K]:
        """One lister over the informers this controller watches ``resource`` with; typed
        when given a kind class."""
        if not isinstance(resource, Resource):
            return typed_lister(self.lister_for(resource_for(resource)), resource)
        selector, metadata = self._read[resource] = self._reader_of(resource)
        return self._manager.informers.lister_for(
            resource, namespaces=self._scopes(resource), label_selector=selector,
            indexers=self._indexers(resource), metadata_only=metadata)

    def informers_for(self, resource: KindOrResource) -> list[SharedIndexInformer]:
        """The shared informers (one per namespace) this controller watches ``resource``
        with, as :meth:`lister_for` reads them."""
        resource = _resource(resource)
        selector, metadata = self._read[resource] = self._reader_of(resource)
        return [self._manager.informers.informer_for(
            resource, namespace=ns, label_selector=selector,
            indexers=self._indexers(resource), metadata_only=metadata)
            for ns in self._scopes(resource)]

    # -- resolution: which informers a watch (or a reader) uses ------------------------
    def _add(self, watch: _Watch) -> None:
        self._watches.append(watch)
        moved = [r for r, read in self._read.items() if self._reader_of(r) != read]
        if moved:
            self._watches.pop()
            raise ValueError(f"declare {moved[0]} before lister_for/informers_for: its "
                             "readers were handed out for another label selector or "
                             "metadata_only")

    def _scopes(self, resource: Resource) -> tuple[str, ...]:
        # "" is every namespace (cluster-scoped resources, or a manager watching all).
        if not resource.namespaced:
            return ("",)
        return self._namespaces or (self._manager.informers.namespace or "",)

    def _watch_selector(self, watch: _Watch) -> str | None:
        selectors = [watch.label_selector or None]
        hooks = self._manager.controller_hooks
        if watch.kind == "for":
            selectors += [hook.for_selector(self) for hook in hooks]
        elif watch.kind == "owns":
            selectors += [owned(self, watch.resource) for hook in hooks
                          if (owned := getattr(hook, "owned_selector", None)) is not None]
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
        return {CONTROLLER_UID_INDEX: controller_uid_index_func} if owned else None

    def _informers(self, watch: _Watch) -> list[SharedIndexInformer]:
        selector = self._watch_selector(watch)
        indexers = self._indexers(watch.resource) if watch.kind == "owns" else None
        return [self._manager.informers.informer_for(
            watch.resource, namespace=ns, label_selector=selector,
            indexers=indexers, metadata_only=watch.metadata_only)
            for ns in self._scopes(watch.resource)]

    def _handler(self, watch: _Watch, queue: Queue) -> ResourceEventHandler:
        predicates = (*self._filters, *watch.predicates)
        handler: ResourceEventHandler
        gate: Callable[[Object], bool] | None = None
        if watch.kind == "for":
            handler = enqueue_object(queue, predicates)
        elif watch.kind == "owns":
            owner = self._for
            assert owner is not None
            admit = self._admit_owner()
            owner_handler = enqueue_owner(queue, owner.group, owner.kind, predicates,
                                          owner_namespaced=owner.namespaced, admit=admit)
            gate = owner_handler.admits if admit is not None else None
            handler = owner_handler
        else:
            assert watch.mapper is not None
            handler = enqueue_requests(queue, watch.mapper, predicates)
        if watch.on_delete is None:
            return handler
        return _ObserveDeletes(handler, watch.on_delete, gate)

    def _admit_owner(self) -> Callable[[Request], bool] | None:
        admits = [a for hook in self._manager.controller_hooks
                  if (a := hook.admit_owner(self)) is not None]
        if len(admits) < 2:
            return admits[0] if admits else None
        return lambda request: all(admit(request) for admit in admits)

    def complete(self, reconciler: Reconciler | ReconcileFunc) -> Controller[Request]:
        """Build the controller, register it with the manager and return it."""
        if self._completed:
            raise RuntimeError(f"controller {self._name} was already completed")
        if not self._watches:
            raise ValueError(f"controller {self._name} watches nothing: call for_ or watches")
        owner = self._for
        if owner is None and any(w.kind == "owns" for w in self._watches):
            raise ValueError("owns needs for_: the owner kind is the for_ resource's")
        run: Reconciler = as_reconciler(reconciler)
        m = self._manager
        for hook in m.controller_hooks:
            run = hook.wrap_reconciler(self, run)
        queue = PriorityQueue[Request](
            name=self._name, clock=m.clock, registry=m.registry,
            rate_limiter=self._rate_limiter) if self._priority_queue else None
        controller = Controller[Request](
            self._name, run, workers=self._workers, queue=queue,
            rate_limiter=None if queue is not None else self._rate_limiter, clock=m.clock,
            registry=m.registry)
        try:
            for watch in self._watches:
                for informer in self._informers(watch):
                    informer.add_event_handler(self._handler(watch, controller.queue))
                    controller.add_wait_for(informer)
            m.add_controller(controller)
        except BaseException:
            controller.queue.shut_down()  # the queue's threads would outlive a failed build
            raise
        self._completed = True
        return controller
