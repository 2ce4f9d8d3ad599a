"""Event handlers that turn informer notifications into work-queue Requests, and predicates.

Contract:

* One handler, :class:`MapHandler`: predicates first (applied once per event), then a mapper
  ``obj -> Iterable[Request]``, then the queue (with the priority below), all inside one
  error guard. Everything below is a mapper on it.
* :func:`enqueue_object` adds the object's own Request (a tombstone's own key on delete).
* :func:`enqueue_owner` adds the Request of the object's *controller* owner reference whose
  kind and API group match (the version is ignored, as controller-runtime does); objects
  without such an owner are ignored. The owner is assumed to live in the object's namespace
  unless ``owner_namespaced=False``. On delete, tombstones are unwrapped to their last known
  state. These two map the new object of an update only (its Request, its owner's).
* :func:`enqueue_requests` adds every Request of a mapper of yours; an update maps both the
  old and the new object (an object that moved to another owner enqueues both owners).
* Predicates filter events before enqueueing; every predicate must pass. A missing hook
  passes. :data:`generation_changed` drops updates whose ``metadata.generation`` is unchanged
  (status-only writes); :data:`resource_version_changed` drops updates with an unchanged
  ``resourceVersion`` (periodic resync duplicates); :data:`labels_changed` and
  :data:`annotations_changed` pass updates that changed the labels, the annotations;
  :func:`label_selector_predicate` passes objects whose labels match a selector. They read
  metadata through :mod:`pyctrl.kube.meta`, so they work on raw dicts and typed objects.
* Predicates compose: ``a & b`` (:func:`and_`) passes when both pass, ``a | b``
  (:func:`or_`) when either does, ``~a`` (:func:`not_`) when ``a`` does not, hook by hook
  (add, update, delete). A missing hook passes, so ``~generation_changed`` drops every add
  and delete (controller-runtime's ``Not`` of a ``Funcs`` does the same).
* A stand-in for an object that did not decode into its kind
  (:class:`pyctrl.cache.Quarantined`) passes every predicate unasked (a predicate may read
  fields it lacks, and its reconciler must run to report it), and so does an update from or
  to one; the mapper still decides which Requests it makes.
* Handlers never raise into the informer: any error is logged and the event is dropped.
* Priorities: when the queue is a :class:`~pyctrl.workqueue.PriorityQueue`, handlers add
  objects from the informer's initial list (``on_add(obj, is_in_initial_list=True)``) and
  resyncs (``on_update`` with an unchanged ``resourceVersion``) at ``LOW_PRIORITY`` and
  everything else at ``NORMAL_PRIORITY`` (:func:`add_priority`, :func:`update_priority`).
  :func:`enqueue_object` also sends its object's status-only updates at LOW (the follow-ups
  of the controller's own status writes; see :func:`is_status_only`); owners and mapped
  objects keep NORMAL for them (a child's status is the owner's input). Any other queue gets
  plain ``add(request)`` calls.
* Handlers only enqueue; they never mutate the (shared) cached objects.
* Handlers and predicates read metadata through :mod:`pyctrl.kube.meta`, so they work on the
  raw dicts of a raw-dict informer and the typed objects of a typed one alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from pyctrl._errorlog import ErrorLog
from pyctrl.cache import DeletedFinalStateUnknown, Quarantined, parse_selector
from pyctrl.kube import meta
from pyctrl.reconcile import Request
from pyctrl.workqueue.priority import LOW_PRIORITY, NORMAL_PRIORITY, PriorityQueue

__all__ = [
    "MapFunc",
    "MapHandler",
    "Predicate",
    "Queue",
    "add_priority",
    "and_",
    "annotations_changed",
    "enqueue_object",
    "enqueue_owner",
    "enqueue_requests",
    "generation_changed",
    "is_status_only",
    "label_selector_predicate",
    "labels_changed",
    "not_",
    "or_",
    "priority_add",
    "resource_version_changed",
    "update_priority",
]

log = structlog.get_logger(__name__)

# What handlers get: a raw-dict informer's dicts, or a typed informer's objects.
Object = Any


class Queue(Protocol):
    """What a handler needs from a work queue."""

    def add(self, item: Request) -> None: ...


OneFn = Callable[[Object], bool]
TwoFn = Callable[[Object, Object], bool]


def _pass1(obj: Object) -> bool:
    return True


def _pass2(old: Object, new: Object) -> bool:
    return True


@dataclass(frozen=True)
class Predicate:
    """Filters for the three event kinds; None means "let it through"; ``&``, ``|`` and
    ``~`` compose them (module docstring)."""

    add: OneFn | None = None
    update: TwoFn | None = None
    delete: OneFn | None = None

    def __and__(self, other: Predicate) -> Predicate:
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return or_(self, other)

    def __invert__(self) -> Predicate:
        return not_(self)


def and_(*predicates: Predicate) -> Predicate:
    """Passes an event when every predicate does."""
    adds = [p.add for p in predicates if p.add is not None]
    updates = [p.update for p in predicates if p.update is not None]
    deletes = [p.delete for p in predicates if p.delete is not None]
    return Predicate(
        add=(lambda o: all(f(o) for f in adds)) if adds else None,
        update=(lambda old, new: all(f(old, new) for f in updates)) if updates else None,
        delete=(lambda o: all(f(o) for f in deletes)) if deletes else None)


def or_(*predicates: Predicate) -> Predicate:
    """Passes an event when any predicate does (a missing hook passes)."""
    adds = [p.add or _pass1 for p in predicates]
    updates = [p.update or _pass2 for p in predicates]
    deletes = [p.delete or _pass1 for p in predicates]
    return Predicate(add=lambda o: any(f(o) for f in adds),
                     update=lambda old, new: any(f(old, new) for f in updates),
                     delete=lambda o: any(f(o) for f in deletes))


def not_(predicate: Predicate) -> Predicate:
    """Passes an event when ``predicate`` does not (a missing hook passes, so its negation
    drops everything)."""
    add, update, delete = (predicate.add or _pass1, predicate.update or _pass2,
                           predicate.delete or _pass1)
    return Predicate(add=lambda o: not add(o), update=lambda old, new: not update(old, new),
                     delete=lambda o: not delete(o))


generation_changed = Predicate(
    update=lambda old, new: meta.generation(old) != meta.generation(new)
)
resource_version_changed = Predicate(
    update=lambda old, new: meta.resource_version(old) != meta.resource_version(new)
)
labels_changed = Predicate(update=lambda old, new: meta.labels(old) != meta.labels(new))
annotations_changed = Predicate(
    update=lambda old, new: meta.annotations(old) != meta.annotations(new))


def label_selector_predicate(selector: str | Mapping[str, str]) -> Predicate:
    """Pass objects whose labels match ``selector`` (``"app=web,tier!=db"`` or a dict)."""
    sel = parse_selector(selector)

    def matches(obj: meta.AnyObject) -> bool:
        return bool(sel.matches(meta.labels(obj)))

    return Predicate(add=matches, update=lambda old, new: matches(new), delete=matches)


def add_priority(is_in_initial_list: bool) -> int:
    """The priority of an add: LOW for the initial list, NORMAL for a create seen live."""
    return LOW_PRIORITY if is_in_initial_list else NORMAL_PRIORITY


# What a status-only update leaves unchanged, besides ``metadata.generation``.
_STATUS_ONLY_SAME: tuple[Callable[[meta.AnyObject], object], ...] = (
    meta.labels, meta.annotations, meta.finalizers, meta.owner_references,
    meta.deletion_timestamp)


def is_status_only(old: meta.AnyObject, new: meta.AnyObject) -> bool:
    """True if ``old`` -> ``new`` changed at most the status: both carry the same
    ``metadata.generation`` (the API server bumps it on spec changes and on deletion) and the
    same labels, annotations, finalizers, owner references and deletion timestamp. Objects
    without a generation (ConfigMaps, ...) never count as status-only."""
    gen = meta.generation(new)
    return gen is not None and gen == meta.generation(old) and all(
        f(old) == f(new) for f in _STATUS_ONLY_SAME)


def update_priority(old: meta.AnyObject, new: meta.AnyObject, *,
                    status_only_low: bool = False) -> int:
    """The priority of an update: LOW for a resync (same resourceVersion) and, with
    ``status_only_low``, for a status-only change; else NORMAL."""
    rv = meta.resource_version(new)
    if rv and rv == meta.resource_version(old):
        return LOW_PRIORITY
    if status_only_low and is_status_only(old, new):
        return LOW_PRIORITY
    return NORMAL_PRIORITY


def priority_add(queue: object) -> Callable[[Request, int], None] | None:
    """``queue.add`` if the queue takes priorities, else None (plain ``add(request)`` then)."""
    return queue.add if isinstance(queue, PriorityQueue) else None


MapFunc = Callable[[Object], Iterable[Request]]


class MapHandler:
    """A ResourceEventHandler that enqueues the Requests ``mapper`` returns for each event
    that passes every predicate (see module docstring). The one handler behind
    :func:`enqueue_object`, :func:`enqueue_owner`, :func:`enqueue_requests` and the Builder.

    ``map_old``: an update maps the old object too (the union, sorted, is enqueued);
    ``tombstone_request``: a tombstone (:class:`DeletedFinalStateUnknown`) enqueues the
    Request of its own key instead of mapping its last state; ``status_only_low``: status-only
    updates go at LOW priority; ``admit(request)``, when given, must be true for a request to
    be enqueued.
    """

    def __init__(
        self,
        queue: Queue,
        mapper: MapFunc,
        predicates: Sequence[Predicate] = (),
        *,
        map_old: bool = True,
        tombstone_request: bool = False,
        status_only_low: bool = False,
        admit: Callable[[Request], bool] | None = None,
    ) -> None:
        self._queue = queue
        self._mapper = mapper
        self._predicates = tuple(predicates)
        self._map_old = map_old
        self._tombstone_request = tombstone_request
        self._status_only_low = status_only_low
        self._admit = admit
        self._add_with_priority = priority_add(queue)
        self._errors = ErrorLog(log)  # a mapper bug hit by every event: few tracebacks

    def _requests(self, obj: Object, old: Object | None = None) -> Iterable[Request]:
        if old is None:
            requests = self._mapper(obj)
            if type(requests) is tuple and len(requests) < 2:  # the built-in mappers' case
                return requests
            return sorted(set(requests))
        return sorted({*self._mapper(old), *self._mapper(obj)})

    def admits(self, obj: Object) -> bool:
        """Whether ``admit`` lets any Request ``obj`` maps to through (True without one)."""
        admit = self._admit
        return admit is None or any(admit(r) for r in self._mapper(obj))

    def _enqueue(self, requests: Iterable[Request], priority: int = NORMAL_PRIORITY) -> None:
        admit, add_with_priority = self._admit, self._add_with_priority
        for request in requests:
            if admit is not None and not admit(request):
                continue
            if add_with_priority is not None:
                add_with_priority(request, priority)
            else:
                self._queue.add(request)

    def on_add(self, obj: Object, is_in_initial_list: bool) -> None:
        try:
            if type(obj) is Quarantined or all(p.add is None or p.add(obj)
                                               for p in self._predicates):
                self._enqueue(self._requests(obj), add_priority(is_in_initial_list))
        except Exception as err:
            self._errors.failure("event handler failed on add; event dropped", err)

    def on_update(self, old: Object, new: Object) -> None:
        try:
            if (type(new) is Quarantined or type(old) is Quarantined
                    or all(p.update is None or p.update(old, new) for p in self._predicates)):
                self._enqueue(self._requests(new, old if self._map_old else None),
                              update_priority(old, new, status_only_low=self._status_only_low))
        except Exception as err:
            self._errors.failure("event handler failed on update; event dropped", err)

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        try:
            last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if last is not None and type(last) is not Quarantined and not all(
                p.delete is None or p.delete(last) for p in self._predicates
            ):
                return
            if isinstance(obj, DeletedFinalStateUnknown) and self._tombstone_request:
                self._enqueue((Request.from_key(obj.key),))
            elif last is not None:
                self._enqueue(self._requests(last))
        except Exception as err:
            self._errors.failure("event handler failed on delete; event dropped", err)


def enqueue_requests(queue: Queue, mapper: MapFunc,
                     predicates: Sequence[Predicate] = ()) -> MapHandler:
    """Enqueue every Request ``mapper(obj)`` returns (for an update, of the old and the new
    object); controller-runtime's ``EnqueueRequestsFromMapFunc``."""
    return MapHandler(queue, mapper, predicates)


def _own_request(obj: meta.AnyObject) -> tuple[Request]:
    return (Request.from_object(obj),)


def enqueue_object(queue: Queue, predicates: Sequence[Predicate] = ()) -> MapHandler:
    """Enqueue each object's own Request (``ns/name``)."""
    return MapHandler(queue, _own_request, predicates, map_old=False, tombstone_request=True,
                      status_only_low=True)


def enqueue_owner(
    queue: Queue,
    owner_group: str,
    owner_kind: str,
    predicates: Sequence[Predicate] = (),
    *,
    owner_namespaced: bool = True,
    admit: Callable[[Request], bool] | None = None,
) -> MapHandler:
    """Enqueue the Request of the object's controller owner of kind ``owner_kind``.

    ``owner_group`` is an API group (``"apps"``, ``""`` for core) or an apiVersion
    (``"apps/v1"``, ``"v1"``); only the group is compared. ``admit(request)``, when given,
    must also be true (a sharded controller admits only owners in its shard's cache).
    """
    group = (meta.api_group(owner_group) if "/" in owner_group or owner_group == "v1"
             else owner_group)

    def owner_request(obj: meta.AnyObject) -> tuple[Request, ...]:
        ref = meta.controller_ref(obj)
        if ref is None or ref.kind != owner_kind or meta.api_group(ref.api_version) != group:
            return ()
        return (Request(meta.namespace(obj) if owner_namespaced else "", ref.name),)

    return MapHandler(queue, owner_request, predicates, map_old=False, admit=admit)
