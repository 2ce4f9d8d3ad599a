"""DeltaFIFO: the queue between a Reflector and an informer (client-go ``DeltaFIFO``).

Contract:

* Each key has an ordered list of :class:`Delta` (``Added``, ``Updated``, ``Deleted``,
  ``Replaced``, ``Sync``). A key appears in the queue at most once; new deltas for a queued
  key are appended to its list, so a consumer sees every change, in order, in one pop.
* Two consecutive deletions of a key collapse into one (a real deletion beats a tombstone).
* ``replace(objs, rv)`` queues ``Replaced`` for every listed object and a ``Deleted``
  :class:`DeletedFinalStateUnknown` tombstone for every key known (queued or in
  ``known_objects``, the informer's indexer) that the relist no longer contains.
* ``pop(process)`` blocks for the oldest key, removes it and calls ``process(deltas,
  is_in_initial_list)`` while holding the queue lock, so ``known_objects`` (updated by
  ``process``) and the queue never disagree during a ``replace``. ``process`` must not block.
* ``stream_initial(page)`` lets the first list's pages be queued (as ``Replaced``) as they
  arrive, so the consumer stores the first pages while later ones are still fetched; the
  list's ``replace(objs, rv)`` must follow. When ``objs`` starts with the very objects
  streamed, in order (the Reflector's case), it only queues the objects after them: nothing
  can have vanished. Otherwise (a list failed after streaming some pages, and the next one's
  pages were streamed too) it skips the objects still queued or stored as they are, queues the
  rest and, as always, a tombstone for every known key not listed.
  Only before the first ``replace``/add/update/delete, and the first page only into an empty
  FIFO with an empty ``known_objects``: otherwise it returns False and queues nothing.
* ``has_synced()`` is True once the first ``replace`` (or any add) happened and every key
  queued by that first ``replace`` (and its streamed pages) has been popped.
* ``resync()`` queues ``Sync`` for every known object that has no pending deltas.
  ``on_synced`` (optional) is called once, with the queue lock held, at that moment.
* ``close()`` makes blocked and future ``pop`` calls raise :class:`FIFOClosedError`.
* A ``transformer`` (e.g. drop managedFields) is applied to objects as they are queued, except
  tombstones and ``Sync`` deltas (those come from the cache and are already transformed).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Literal, NamedTuple, Protocol

from pyctrl.cache.keys import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key
from pyctrl.cache.store import KeyFunc
from pyctrl.kube.interface import RawObject

__all__ = [
    "ADDED",
    "DELETED",
    "REPLACED",
    "SYNC",
    "UPDATED",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "FIFOClosedError",
    "KeyListerGetter",
    "PopProcessFunc",
    "TransformFunc",
]

DeltaType = Literal["Added", "Updated", "Deleted", "Replaced", "Sync"]
ADDED: DeltaType = "Added"
UPDATED: DeltaType = "Updated"
DELETED: DeltaType = "Deleted"
REPLACED: DeltaType = "Replaced"
SYNC: DeltaType = "Sync"

TransformFunc = Callable[[RawObject], RawObject]


class Delta(NamedTuple):
    """One change to one object: what happened and the object (or tombstone) after it."""

    type: DeltaType
    object: RawObject | DeletedFinalStateUnknown


PopProcessFunc = Callable[[list[Delta], bool], None]


class KeyListerGetter(Protocol):
    """What the FIFO needs from the informer's cache to detect deletions and resync."""

    def list_keys(self) -> list[str]: ...

    def get_by_key(self, key: str) -> RawObject | None: ...


class FIFOClosedError(Exception):
    """Raised by :meth:`DeltaFIFO.pop` once the queue is closed."""


class DeltaFIFO:
    """A per-key queue of deltas (see module docstring)."""

    def __init__(self, *, key_func: KeyFunc = deletion_handling_meta_namespace_key,
                 known_objects: KeyListerGetter | None = None,
                 transformer: TransformFunc | None = None,
                 emit_delta_type_replaced: bool = True,
                 on_synced: Callable[[], None] | None = None) -> None:
        self._key_func = key_func
        self._known = known_objects
        self._transformer = transformer
        self._replace_type: DeltaType = REPLACED if emit_delta_type_replaced else SYNC
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._items: dict[str, list[Delta]] = {}
        self._queue: deque[str] = deque()
        self._populated = False
        self._initial_population_count = 0
        # The objects stream_initial queued, in order, until the list's replace.
        self._streamed: list[RawObject] | None = None
        self._closed = False
        self._on_synced = on_synced

    # -- producers (the Reflector) --------------------------------------------------------
    def add(self, obj: RawObject) -> None:
        with self._lock:
            self._populated = True
            self._queue_action(ADDED, obj)

    def update(self, obj: RawObject) -> None:
        with self._lock:
            self._populated = True
            self._queue_action(UPDATED, obj)

    def delete(self, obj: RawObject | DeletedFinalStateUnknown) -> None:
        key = self._key_func(obj)
        with self._lock:
            self._populated = True
            if key not in self._items and (
                self._known is None or self._known.get_by_key(key) is None
            ):
                return  # never heard of it: nothing to tell consumers
            self._queue_action(DELETED, obj)

    def stream_initial(self, objs: Iterable[RawObject]) -> bool:
        """Queue ``Replaced`` for one page of the first list, before that list ends.

        Returns False, queuing nothing, once anything was replaced, added, updated or deleted,
        or if the first page comes while anything is queued or ``known_objects`` holds keys
        (see the module docstring).
        """
        with self._lock:
            if self._populated:
                return False
            streamed = self._streamed
            if streamed is None:  # the list's first page: the FIFO and its cache are empty
                if self._items or self._queue or (
                        self._known is not None and self._known.list_keys()):
                    return False
                streamed = self._streamed = []
            objs = objs if isinstance(objs, list) else list(objs)
            streamed.extend(objs)
            self._initial_population_count += self._append_replaced(objs)
            self._cond.notify_all()
            return True

    def replace(self, objs: Iterable[RawObject], resource_version: str = "") -> None:
        with self._lock:
            streamed, self._streamed = self._streamed, None
            listed: set[str] | None = None
            queued_deletions = 0
            if streamed is not None:
                objs = objs if isinstance(objs, list) else list(objs)
                if _starts_with(objs, streamed):
                    # Everything queued or known came from these very pages: nothing can have
                    # vanished, and only the objects after them are left to queue.
                    self._append_replaced(objs[len(streamed):])
                else:
                    # Another list's pages were streamed too (it failed): the long way.
                    listed = self._queue_replaced_unstreamed(objs)
                    queued_deletions = self._queue_vanished(listed)
            elif not self._items and not self._queue:
                # Always taken for an initial list that was not streamed: nothing is queued,
                # so nothing can have vanished from the queue and no dedup is needed.
                self._append_replaced(objs)
                listed = set(self._items)
            else:
                listed = set()
                for obj in objs:
                    listed.add(self._queue_action(self._replace_type, obj))
                queued_deletions = self._queue_vanished(listed)
            known = self._known
            if known is not None and listed is not None:
                items = self._items
                for key in known.list_keys():
                    if key in listed or items.get(key):
                        continue
                    queued_deletions += 1
                    tombstone = DeletedFinalStateUnknown(key, known.get_by_key(key))
                    self._queue_action(DELETED, tombstone)
            if not self._populated:
                self._populated = True
                if streamed is not None:
                    # Streamed keys popped meanwhile are done; every key queued now is initial.
                    self._initial_population_count = len(self._queue)
                else:
                    assert listed is not None
                    self._initial_population_count = len(listed) + queued_deletions
                if self._initial_population_count == 0:
                    self._synced()
            self._cond.notify_all()

    def _append_replaced(self, objs: Iterable[RawObject]) -> int:
        # Lock held, and the queue holds only Replaced deltas of lists (nothing to dedup):
        # queue Replaced for each object. Returns how many keys it queued.
        key_func = self._key_func
        transform = self._transformer
        rtype = self._replace_type
        items = self._items
        queue = self._queue
        queued = len(queue)
        for raw in objs:
            obj = transform(raw) if transform is not None else raw
            key = key_func(obj)
            deltas = items.get(key)
            if deltas is None:
                queue.append(key)
                items[key] = [Delta(rtype, obj)]
            else:
                deltas.append(Delta(rtype, obj))
        return len(queue) - queued

    def _queue_replaced_unstreamed(self, objs: Iterable[RawObject]) -> set[str]:
        # Lock held, after stream_initial: an object a page queued is still queued (its last
        # delta) or was popped into known_objects; those very objects are skipped, the rest
        # queued. No table of the streamed objects is kept (it would cost memory for the
        # whole list). Returns the listed keys.
        key_func = self._key_func
        items = self._items
        known = self._known
        listed: set[str] = set()
        for obj in objs:
            key = key_func(obj)
            deltas = items.get(key)
            if not ((deltas is not None and deltas[-1].object is obj)
                    or (known is not None and known.get_by_key(key) is obj)):
                self._queue_action(self._replace_type, obj)
            listed.add(key)
        return listed

    def _queue_vanished(self, listed: set[str]) -> int:
        # Lock held: a Deleted tombstone for each queued key the relist no longer has.
        count = 0
        for key, deltas in list(self._items.items()):
            if key in listed:
                continue
            last = deltas[-1].object
            if isinstance(last, DeletedFinalStateUnknown):
                last = last.obj
            count += 1
            self._queue_action(DELETED, DeletedFinalStateUnknown(key, last))
        return count

    def resync(self) -> None:
        """Queue ``Sync`` for every known object without pending deltas."""
        if self._known is None:
            return
        with self._lock:
            for key in self._known.list_keys():
                if self._items.get(key):
                    continue
                obj = self._known.get_by_key(key)
                if obj is not None:
                    self._queue_action(SYNC, obj)

    # -- consumer (the informer) -----------------------------------------------------------
    def pop(self, process: PopProcessFunc) -> None:
        """Block for the oldest key and hand its deltas to ``process`` (lock held)."""
        with self._cond:
            while not self._queue:
                if self._closed:
                    raise FIFOClosedError
                self._cond.wait()
            in_initial = not (self._populated and self._initial_population_count == 0)
            key = self._queue.popleft()
            if self._initial_population_count > 0:
                self._initial_population_count -= 1
            deltas = self._items.pop(key)
            process(deltas, in_initial)
            if in_initial and self._initial_population_count == 0 and self._populated:
                self._synced()

    def pop_batch(self, process: PopProcessFunc, max_items: int = 256) -> int:
        """Like :meth:`pop`, but drains up to ``max_items`` ready keys in one lock hold.

        Each key still gets its own ``process`` call, in queue order. Returns the count.
        """
        with self._cond:
            while not self._queue:
                if self._closed:
                    raise FIFOClosedError
                self._cond.wait()
            queue = self._queue
            items = self._items
            n = 0
            while queue and n < max_items:
                in_initial = not (self._populated and self._initial_population_count == 0)
                key = queue.popleft()
                if self._initial_population_count > 0:
                    self._initial_population_count -= 1
                process(items.pop(key), in_initial)
                n += 1
                if in_initial and self._initial_population_count == 0 and self._populated:
                    self._synced()
            return n

    def has_synced(self) -> bool:
        with self._lock:
            return self._populated and self._initial_population_count == 0

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        with self._lock:
            return self._closed

    # -- inspection (tests, debugging) ---------------------------------------------------
    def list_keys(self) -> list[str]:
        with self._lock:
            return list(self._queue)

    def get_by_key(self, key: str) -> list[Delta] | None:
        with self._lock:
            deltas = self._items.get(key)
            return list(deltas) if deltas else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)

    # -- internals -------------------------------------------------------------------------
    def _synced(self) -> None:
        # Lock held; fires once, when has_synced() first turns True.
        if self._on_synced is not None:
            self._on_synced()

    def _queue_action(self, action: DeltaType, obj: RawObject | DeletedFinalStateUnknown) -> str:
        # Lock held.
        if (self._transformer is not None and action != SYNC
                and not isinstance(obj, DeletedFinalStateUnknown)):
            obj = self._transformer(obj)
        key = self._key_func(obj)
        deltas = self._items.get(key)
        delta = Delta(action, obj)
        if deltas is None:
            self._items[key] = [delta]
            self._queue.append(key)
            self._cond.notify()
            return key
        deltas.append(delta)
        _dedup_deltas(deltas)
        return key


def _starts_with(objs: list[RawObject], prefix: list[RawObject]) -> bool:
    # The very same objects, in order.
    return len(objs) >= len(prefix) and all(a is b for a, b in zip(objs, prefix, strict=False))


def _dedup_deltas(deltas: list[Delta]) -> None:
    # Two deletions in a row say the same thing; keep the one with more information
    # (a real deletion over a relist tombstone).
    if len(deltas) < 2:
        return
    newest, older = deltas[-1], deltas[-2]
    if newest.type == DELETED and older.type == DELETED:
        keep = newest if isinstance(older.object, DeletedFinalStateUnknown) else older
        deltas[-2:] = [keep]
