"""Builder: wire a controller's informers, handlers, queue and reconciler in one chain.

Contract (controller-runtime's ``pkg/builder``, in threads)::

    manager.controller("foo", workers=2).for_(Foo).owns(Deployment) \\
        .watches(CONFIGMAPS, mapper).with_event_filter(pred).complete(reconciler)

* ``for_``/``owns``/``watches``/``lister_for``/``informers_for`` take a kind class (a
  :class:`pyctrl.api.Object` subclass, e.g. from :mod:`pyctrl.models`) or a
  :class:`~pyctrl.kube.Resource` (the kind's is :func:`pyctrl.api.resource_for`). A kind class
  is watched on typed informers: handlers, mappers, predicates, ``on_delete``, the controller
  hooks and ``lister_for(Kind)`` (a ``MultiNamespaceLister[Kind]``) see its frozen objects; a
  Resource on raw-dict informers. Within one controller a resource has the form of its first
  declaration or reader (the other form raises ValueError; ``informers_for`` and
  :meth:`reader_for` of its Resource follow it); each form has its own shared informers.
* ``for_`` enqueues each object's own Request; ``owns`` indexes by controller UID and
  enqueues each object's controller owner of the ``for_`` kind; ``watches`` enqueues what
  ``mapper(obj)`` returns (old and new object of an update). A mapper that raises drops the
  event (logged). ``metadata_only=True`` (a Resource only): a metadata-only informer.
* Predicates: ``with_event_filter`` for every watch, ``predicates=`` for one; all must pass.
  ``on_delete`` sees each delete (object or tombstone; for ``owns``, of admitted owners only)
  before predicates and enqueue; an observer that raises is logged.
* ``with_options``: the queue's rate limiter, the namespaces watched (default the manager's),
  ``priority_queue=True`` (a :class:`~pyctrl.workqueue.PriorityQueue`).
* ``lister_for``/``informers_for`` read exactly the informers the resource is watched with
  (per namespace, merged; the ``for_`` watch's selector, else the first watch's; the owned
  index, the ``index`` ones); an undeclared resource is read whole. Declared after them, a
  watch or namespaces that would move them to other informers raises ValueError.
* ``index(Kind, name, func)`` adds the index ``name`` (``func(obj)``: the values an object is
  filed under; it receives the form declared, as handlers do) to every informer of ``Kind``
  this controller uses, read by ``lister_for(Kind).by_index(name, value)``: the reverse
  lookup of a ``watches`` mapper. Declared before the resource's readers; a name declared
  twice (or a built-in index's name) raises ValueError. Index names are shared by every
  controller reading the same informer: the first function given a name keeps it.
* :meth:`complete` builds the :class:`Controller` (queue, clock, registry from the manager;
  waits for its informers), registers it and returns it, once, before ``Manager.run``.
* RBAC: ``owns(writes=...)``, ``rbac(*rules, status=...)``; :meth:`rbac_declared` is what
  ``gen rbac`` reads. Controller hooks (:mod:`pyctrl.extension`, read when the Builder is
  made) add selectors to the ``for_``/``owns`` informers, filter owners, wrap the reconciler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, overload

import structlog

from pyctrl._wiring import DeleteObserver, K, T, Watch, Wiring, split
from pyctrl.cache import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    ResourceEventHandler,
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
from pyctrl.kube.interface import RawObject as Raw
from pyctrl.kube.resource import Resource
from pyctrl.rbac import DEFAULT_OWNED_WRITES, Declared, PolicyRule
from pyctrl.reconcile import ReconcileFunc, Reconciler, Request, as_reconciler
from pyctrl.record import EventRecorder
from pyctrl.workqueue import PriorityQueue, RateLimiter

__all__ = ["Builder", "DeleteObserver", "MapFunc"]

log = structlog.get_logger(__name__)


class _ObserveDeletes:
    """Hands each delete notification to ``observer`` first (only when ``gate`` passes the
    last known state), then to ``inner``."""

    def __init__(self, inner: ResourceEventHandler, observer: DeleteObserver[Any],
                 gate: Callable[[Any], bool] | None = None) -> None:
        self._inner = inner
        self._observer = observer
        self._gate = gate

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._inner.on_add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        self._inner.on_update(old, new)

    def on_delete(self, obj: Any) -> None:
        try:
            last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if self._gate is None or last is None or self._gate(last):
                self._observer(obj)
        except Exception:  # never raise into the informer; the enqueue still matters
            log.exception("delete observer failed")
        self._inner.on_delete(obj)


class Builder(Wiring):
    """Collects what a controller watches, then builds it (see module docstring)."""

    # Overloads: a kind class's observers and mappers take its objects, a Resource's dicts.
    @overload
    def for_(self, resource: type[K], *, predicates: Sequence[Predicate] = (),
             label_selector: str | None = None, on_delete: DeleteObserver[K] | None = None,
             metadata_only: bool = False) -> Builder: ...

    @overload
    def for_(self, resource: Resource, *, predicates: Sequence[Predicate] = (),
             label_selector: str | None = None, on_delete: DeleteObserver[Raw] | None = None,
             metadata_only: bool = False) -> Builder: ...

    def for_(self, resource: Resource | type[T], *, predicates: Sequence[Predicate] = (),
             label_selector: str | None = None,
             on_delete: DeleteObserver[T] | None = None,
             metadata_only: bool = False) -> Builder:
        """Reconcile ``resource`` (or a kind class): each object's own key is enqueued."""
        if self._for is not None:
            raise ValueError(f"for_ already set to {self._for}")
        res = self._declare(resource, "for", None, predicates, label_selector, on_delete,
                            metadata_only)
        self._for = res
        return self

    @overload
    def owns(self, resource: type[K], *, predicates: Sequence[Predicate] = (),
             label_selector: str | None = None, on_delete: DeleteObserver[K] | None = None,
             metadata_only: bool = False,
             writes: Sequence[str] = DEFAULT_OWNED_WRITES) -> Builder: ...

    @overload
    def owns(self, resource: Resource, *, predicates: Sequence[Predicate] = (),
             label_selector: str | None = None, on_delete: DeleteObserver[Raw] | None = None,
             metadata_only: bool = False,
             writes: Sequence[str] = DEFAULT_OWNED_WRITES) -> Builder: ...

    def owns(self, resource: Resource | type[T], *, predicates: Sequence[Predicate] = (),
             label_selector: str | None = None,
             on_delete: DeleteObserver[T] | None = None, metadata_only: bool = False,
             writes: Sequence[str] = DEFAULT_OWNED_WRITES) -> Builder:
        """Enqueue the ``for_`` owner (controller reference) of each ``resource`` object.
        ``writes``: the verbs the reconciler uses on ``resource`` (for ``gen rbac``)."""
        res = self._declare(resource, "owns", None, predicates, label_selector, on_delete,
                            metadata_only)
        self._owned_writes[res] = (*self._owned_writes.get(res, ()), *writes)
        return self

    @overload
    def watches(self, resource: type[K], mapper: Callable[[K], Iterable[Request]], *,
                predicates: Sequence[Predicate] = (), label_selector: str | None = None,
                on_delete: DeleteObserver[K] | None = None,
                metadata_only: bool = False) -> Builder: ...

    @overload
    def watches(self, resource: Resource, mapper: Callable[[Raw], Iterable[Request]], *,
                predicates: Sequence[Predicate] = (), label_selector: str | None = None,
                on_delete: DeleteObserver[Raw] | None = None,
                metadata_only: bool = False) -> Builder: ...

    def watches(self, resource: Resource | type[T], mapper: Callable[[T], Iterable[Request]],
                *, predicates: Sequence[Predicate] = (),
                label_selector: str | None = None,
                on_delete: DeleteObserver[T] | None = None,
                metadata_only: bool = False) -> Builder:
        """Enqueue every Request ``mapper(obj)`` returns for each ``resource`` event."""
        self._declare(resource, "map", mapper, predicates, label_selector, on_delete,
                      metadata_only)
        return self

    @overload
    def index(self, resource: type[K], name: str,
              func: Callable[[K], Iterable[str]]) -> Builder: ...

    @overload
    def index(self, resource: Resource, name: str,
              func: Callable[[Raw], Iterable[str]]) -> Builder: ...

    def index(self, resource: Resource | type[T], name: str,
              func: Callable[[T], Iterable[str]]) -> Builder:
        """Index ``resource``'s cache by ``func`` (the values an object is filed under) as
        ``name``: ``lister_for(resource).by_index(name, value)`` reads it."""
        res, kind_class = split(resource)
        if name in (CONTROLLER_UID_INDEX, NAMESPACE_INDEX) or name in self._indexes.get(
                res, {}):
            raise ValueError(f"index {name!r} of {res.plural} is already declared")
        if res in self._read:
            raise ValueError(f"declare index {name!r} before lister_for/informers_for of "
                             f"{res.plural}: its readers were handed out without it")
        self._claim(res, kind_class)
        self._indexes.setdefault(res, {})[name] = lambda obj: list(func(obj))
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
                     priority_queue: bool | None = None,
                     recorder: EventRecorder | None = None) -> Builder:
        """The queue's rate limiter; the namespaces to watch (default: the manager's);
        whether the queue is a PriorityQueue; the recorder of the controller's own Warning
        Events (AlreadyOwned: :class:`pyctrl.Controller`)."""
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
        if recorder is not None:
            self._recorder = recorder
        return self

    def _handler(self, watch: Watch, queue: Queue) -> ResourceEventHandler:
        predicates = (*self._filters, *watch.predicates)
        handler: ResourceEventHandler
        gate: Callable[[Any], bool] | None = None
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
        admits = [a for hook in self._hooks
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
        for hook in self._hooks:
            run = hook.wrap_reconciler(self, run)
        queue = PriorityQueue[Request](
            name=self._name, clock=m.clock, registry=m.registry,
            rate_limiter=self._rate_limiter) if self._priority_queue else None
        controller = Controller[Request](
            self._name, run, workers=self._workers, queue=queue,
            rate_limiter=None if queue is not None else self._rate_limiter, clock=m.clock,
            registry=m.registry, recorder=self._recorder)
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
        self._controller = controller
        return controller

    def discard(self) -> None:
        """Release what :meth:`complete` started (the queue's threads), for a manager that
        will never run (the generators build one only to read the declarations)."""
        if self._controller is not None:
            self._controller.queue.shut_down()
