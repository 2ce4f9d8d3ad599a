"""Event handlers that turn informer notifications into work-queue keys, and predicates.

Contract:

* :func:`enqueue_object` adds the object's ``ns/name`` key (a tombstone's own key on delete).
* :func:`enqueue_owner` adds the key of the object's *controller* owner reference whose kind
  and API group match (the version is ignored, as controller-runtime does); objects without
  such an owner are ignored. The owner is assumed to live in the object's namespace unless
  ``owner_namespaced=False``. On delete, tombstones are unwrapped to their last known state.
* Predicates filter events before enqueueing; every predicate must pass. A missing hook
  passes. :data:`generation_changed` drops updates whose ``metadata.generation`` is unchanged
  (status-only writes); :data:`resource_version_changed` drops updates with an unchanged
  ``resourceVersion`` (periodic resync duplicates); :func:`label_selector_predicate` passes
  objects whose labels match a selector.
* Handlers never raise into the informer: any error is logged and the event is dropped.
* Priorities: when the queue is a :class:`~pyctrl.workqueue.PriorityQueue`, handlers add
  objects from the informer's initial list (``on_add(obj, is_in_initial_list=True)``) and
  resyncs (``on_update`` with an unchanged ``resourceVersion``) at ``LOW_PRIORITY`` and
  everything else at ``NORMAL_PRIORITY`` (:func:`add_priority`, :func:`update_priority`).
  :func:`enqueue_object` also sends its object's status-only updates at LOW (the follow-ups
  of the controller's own status writes; see :func:`is_status_only`); owners and mapped
  objects keep NORMAL for them (a child's status is the owner's input). Any other queue gets
  plain ``add(key)`` calls, exactly as before.
* Handlers only enqueue; they never mutate the (shared) cached objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from pyctrl.cache import DeletedFinalStateUnknown, meta_namespace_key, parse_selector
from pyctrl.kube.interface import Object
from pyctrl.kube.meta import controller_of
from pyctrl.workqueue.priority import LOW_PRIORITY, NORMAL_PRIORITY, PriorityQueue

__all__ = [
    "EnqueueHandler",
    "Predicate",
    "Queue",
    "add_priority",
    "enqueue_object",
    "enqueue_owner",
    "generation_changed",
    "is_status_only",
    "label_selector_predicate",
    "priority_add",
    "resource_version_changed",
    "update_priority",
]

log = structlog.get_logger(__name__)


class Queue(Protocol):
    """What a handler needs from a work queue."""

    def add(self, item: str) -> None: ...


@dataclass(frozen=True)
class Predicate:
    """Filters for the three event kinds; None means "let it through"."""

    add: Callable[[Object], bool] | None = None
    update: Callable[[Object, Object], bool] | None = None
    delete: Callable[[Object], bool] | None = None


def _meta(obj: Object, field: str) -> Any:
    return (obj.get("metadata") or {}).get(field)


generation_changed = Predicate(
    update=lambda old, new: _meta(old, "generation") != _meta(new, "generation")
)
resource_version_changed = Predicate(
    update=lambda old, new: _meta(old, "resourceVersion") != _meta(new, "resourceVersion")
)


def label_selector_predicate(selector: str | Mapping[str, str]) -> Predicate:
    """Pass objects whose labels match ``selector`` (``"app=web,tier!=db"`` or a dict)."""
    sel = parse_selector(selector)

    def matches(obj: Object) -> bool:
        return bool(sel.matches(_meta(obj, "labels") or {}))

    return Predicate(add=matches, update=lambda old, new: matches(new), delete=matches)


def add_priority(is_in_initial_list: bool) -> int:
    """The priority of an add: LOW for the initial list, NORMAL for a create seen live."""
    return LOW_PRIORITY if is_in_initial_list else NORMAL_PRIORITY


# What a status-only update leaves unchanged, besides ``metadata.generation``.
_STATUS_ONLY_SAME = ("labels", "annotations", "finalizers", "ownerReferences",
                     "deletionTimestamp")


def is_status_only(old: Object, new: Object) -> bool:
    """True if ``old`` -> ``new`` changed at most the status: both carry the same
    ``metadata.generation`` (the API server bumps it on spec changes and on deletion) and the
    same labels, annotations, finalizers, owner references and deletion timestamp. Objects
    without a generation (ConfigMaps, ...) never count as status-only."""
    mo = old.get("metadata") or {}
    mn = new.get("metadata") or {}
    gen = mn.get("generation")
    return gen is not None and gen == mo.get("generation") and all(
        mo.get(f) == mn.get(f) for f in _STATUS_ONLY_SAME)


def update_priority(old: Object, new: Object, *, status_only_low: bool = False) -> int:
    """The priority of an update: LOW for a resync (same resourceVersion) and, with
    ``status_only_low``, for a status-only change; else NORMAL."""
    rv = _meta(new, "resourceVersion")
    if rv is not None and rv == _meta(old, "resourceVersion"):
        return LOW_PRIORITY
    if status_only_low and is_status_only(old, new):
        return LOW_PRIORITY
    return NORMAL_PRIORITY


def priority_add(queue: object) -> Callable[[str, int], None] | None:
    """``queue.add`` if the queue takes priorities, else None (plain ``add(key)`` then)."""
    return queue.add if isinstance(queue, PriorityQueue) else None


KeyFunc = Callable[[Object], str | None]


class EnqueueHandler:
    """A ResourceEventHandler that maps objects to keys and adds them to a queue."""

    def __init__(
        self,
        queue: Queue,
        key_func: KeyFunc,
        predicates: Sequence[Predicate] = (),
        *,
        tombstone_key: bool = False,
        status_only_low: bool = False,
        admit: Callable[[str], bool] | None = None,
    ) -> None:
        self._queue = queue
        self._key_func = key_func
        self._admit = admit
        self._predicates = tuple(predicates)
        self._tombstone_key = tombstone_key
        self._status_only_low = status_only_low
        self._add_with_priority = priority_add(queue)

    def _enqueue(self, obj: Object, priority: int = NORMAL_PRIORITY) -> None:
        key = self._key_func(obj)
        if key and (self._admit is None or self._admit(key)):
            if self._add_with_priority is not None:
                self._add_with_priority(key, priority)
            else:
                self._queue.add(key)

    def on_add(self, obj: Object, is_in_initial_list: bool) -> None:
        try:
            if all(p.add is None or p.add(obj) for p in self._predicates):
                self._enqueue(obj, add_priority(is_in_initial_list))
        except Exception:
            log.exception("add handler failed; event dropped")

    def on_update(self, old: Object, new: Object) -> None:
        try:
            if all(p.update is None or p.update(old, new) for p in self._predicates):
                self._enqueue(new, update_priority(
                    old, new, status_only_low=self._status_only_low))
        except Exception:
            log.exception("update handler failed; event dropped")

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        try:
            last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if last is not None and not all(
                p.delete is None or p.delete(last) for p in self._predicates
            ):
                return
            if isinstance(obj, DeletedFinalStateUnknown) and self._tombstone_key:
                self._queue.add(obj.key)
            elif last is not None:
                self._enqueue(last)
        except Exception:
            log.exception("delete handler failed; event dropped")


def enqueue_object(queue: Queue, predicates: Sequence[Predicate] = ()) -> EnqueueHandler:
    """Enqueue each object's own ``ns/name`` key."""
    return EnqueueHandler(queue, meta_namespace_key, predicates, tombstone_key=True,
                          status_only_low=True)


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def enqueue_owner(
    queue: Queue,
    owner_group: str,
    owner_kind: str,
    predicates: Sequence[Predicate] = (),
    *,
    owner_namespaced: bool = True,
    admit: Callable[[str], bool] | None = None,
) -> EnqueueHandler:
    """Enqueue the key of the object's controller owner of kind ``owner_kind``.

    ``owner_group`` is an API group (``"apps"``, ``""`` for core) or an apiVersion
    (``"apps/v1"``, ``"v1"``); only the group is compared. ``admit(key)``, when given, must
    also be true (a sharded controller admits only owners in its shard's cache).
    """
    group = _group_of(owner_group) if "/" in owner_group or owner_group == "v1" else owner_group

    def owner_key(obj: Object) -> str | None:
        ref = controller_of(obj)
        if ref is None or ref.get("kind") != owner_kind or _group_of(
                str(ref.get("apiVersion"))) != group:
            return None
        namespace = _meta(obj, "namespace") if owner_namespaced else None
        name = str(ref.get("name"))
        return f"{namespace}/{name}" if namespace else name

    return EnqueueHandler(queue, owner_key, predicates, admit=admit)
