"""Store and Indexer: the thread-safe in-memory cache behind informers and listers.

Contract (mirrors client-go ``cache.Indexer`` / ``threadSafeMap``):

* Objects are stored under ``key_func(obj)`` (default: ``"ns/name"``), exactly as given:
  no copies are made on write or read. Callers MUST treat returned objects as read-only;
  copy (``copy.deepcopy``) before changing anything. The informer's mutation detector
  (``PYCTRL_CACHE_MUTATION_DETECTOR=1``) catches violations in tests.
* Every method is atomic with respect to the others (one lock). ``list``/``list_keys``/
  ``by_index`` return fresh lists, so iterating them never races a writer.
* Indexes are kept current on every write: ``indices[name][value]`` is the set of keys whose
  object the index function files under ``value``. Empty value sets are dropped so deleted
  values do not leak memory.
* ``add_indexers`` may be called on a non-empty store: existing objects are indexed at once.
* ``replace`` swaps the whole content in one step and rebuilds the indexes.
* :meth:`wait_for_key` blocks a reader until the object under a key (and the
  resourceVersion its last :meth:`pop` carried, kept for the last :data:`DELETES_KEPT`
  deletes) passes a test, woken by every write (a Condition on the store's lock: no
  polling), bounded by a Clock's timeout; a write with nobody waiting pays one integer test.
  Read-your-own-writes (:mod:`pyctrl.cache.ownwrites`) waits through it.
* Stand-ins (:class:`~pyctrl.cache.quarantine.Quarantined`: objects that did not decode into
  a typed informer's kind) are stored, listed by ``list`` and counted by ``quarantined``, but
  never given to an index function nor filed in an index: ``by_index`` never returns one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from pyctrl.cache.index import Indexers, IndexFunc
from pyctrl.cache.keys import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key
from pyctrl.cache.quarantine import Quarantined
from pyctrl.clock import Clock
from pyctrl.kube import meta
from pyctrl.kube.interface import RawObject

__all__ = ["DELETES_KEPT", "Indexer", "KeyFunc", "Store"]

DELETES_KEPT = 4096

# Typed as any class, so comparing the type of a RawObject (a dict, to type checkers) with it
# is allowed: a typed informer's stand-ins live here too.
_STAND_IN: type = Quarantined
KeyFunc = Callable[[RawObject | DeletedFinalStateUnknown], str]
# Aliases: inside the class, ``list`` names the method, not the builtin.
_Objects = list[RawObject]
_Keys = list[str]


class Indexer:
    """A thread-safe keyed store with secondary indexes (see module docstring)."""

    __slots__ = ("_changed", "_deleted", "_indexers", "_indices", "_items", "_key_func",
                 "_lock", "_quarantined", "_waiting")

    def __init__(self, key_func: KeyFunc = deletion_handling_meta_namespace_key,
                 indexers: Indexers | None = None) -> None:
        self._key_func = key_func
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # wait_for_key's wake-up
        self._waiting = 0  # readers in wait_for_key (writes notify only when some wait)
        self._deleted: dict[str, str] = {}  # key -> resourceVersion its last pop carried
        self._items: dict[str, RawObject] = {}
        self._indexers: Indexers = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self._quarantined: set[str] = set()  # keys of stand-ins
        if indexers:
            self.add_indexers(indexers)

    # -- writes -------------------------------------------------------------------------
    def add(self, obj: RawObject) -> None:
        """Insert or overwrite ``obj`` under its key."""
        self.update(obj)

    def update(self, obj: RawObject) -> None:
        """Insert or overwrite ``obj`` under its key, re-filing it in every index."""
        key = self._key_func(obj)
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._file(old, obj, key)
            if self._waiting:
                self._changed.notify_all()

    def add_or_update(self, obj: RawObject) -> RawObject | None:
        """Store ``obj`` and return what was stored under its key before (None if new).

        One lock hold for the informer's get-then-write, so the pair is atomic.
        """
        key = self._key_func(obj)
        with self._lock:
            items = self._items
            old = items.get(key)
            items[key] = obj
            self._file(old, obj, key)
            if self._waiting:
                self._changed.notify_all()
            return old

    def pop(self, obj: RawObject | DeletedFinalStateUnknown) -> RawObject | None:
        """Delete the object under ``obj``'s key and return it (None if absent)."""
        key = self._key_func(obj)
        rv = "" if isinstance(obj, DeletedFinalStateUnknown) else meta.resource_version(obj)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._file(old, None, key)
            if rv:
                deleted = self._deleted
                deleted.pop(key, None)
                deleted[key] = rv
                if len(deleted) > DELETES_KEPT:
                    del deleted[next(iter(deleted))]
            if self._waiting:
                self._changed.notify_all()
            return old

    def delete(self, obj: RawObject | DeletedFinalStateUnknown) -> None:
        """Remove the object stored under ``obj``'s key (a tombstone works too)."""
        key = self._key_func(obj)
        self.delete_by_key(key)

    def delete_by_key(self, key: str) -> None:
        """Remove whatever is stored under ``key``; a missing key is not an error."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._file(old, None, key)
            if self._waiting:
                self._changed.notify_all()

    def replace(self, objs: Iterable[RawObject], resource_version: str = "") -> None:
        """Make the store hold exactly ``objs``; indexes are rebuilt from scratch."""
        key_func = self._key_func
        items = {key_func(o): o for o in objs}
        quarantined = {k for k, o in items.items() if type(o) is _STAND_IN}
        with self._lock:
            self._items = items
            self._quarantined = quarantined
            self._indices = {name: {} for name in self._indexers}
            if self._indexers:
                for key, obj in items.items():
                    if not quarantined or key not in quarantined:
                        self._update_indices(None, obj, key)
            if self._waiting:
                self._changed.notify_all()

    def resync(self) -> None:
        """No-op: a plain store has nothing to resync (present for the Store protocol)."""

    # -- reads --------------------------------------------------------------------------
    def get(self, obj: RawObject | DeletedFinalStateUnknown) -> RawObject | None:
        """The stored object with ``obj``'s key, or None."""
        return self.get_by_key(self._key_func(obj))

    def get_by_key(self, key: str) -> RawObject | None:
        """The stored object under ``key``, or None."""
        with self._lock:
            return self._items.get(key)

    def wait_for_key(self, key: str, ready: Callable[[RawObject | None, str], bool],
                     clock: Clock, timeout: float) -> bool:
        """Block until ``ready(object under key or None, resourceVersion of its last pop or
        "")`` holds (re-tested after every write) or ``timeout`` seconds of ``clock`` pass;
        whether it held. ``ready`` runs under the store's lock: it must only read."""
        deadline = clock.monotonic() + timeout
        with self._changed:
            if ready(self._items.get(key), self._deleted.get(key, "")):
                return True
            self._waiting += 1
            try:
                while not ready(self._items.get(key), self._deleted.get(key, "")):
                    remaining = deadline - clock.monotonic()
                    if remaining <= 0:
                        return False
                    clock.wait(self._changed, remaining)
                return True
            finally:
                self._waiting -= 1

    @property
    def waiting(self) -> int:
        """How many readers block in :meth:`wait_for_key` now."""
        with self._lock:
            return self._waiting

    def list(self) -> _Objects:
        """All stored objects (a new list; the objects themselves are shared, read-only)."""
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> _Keys:
        """All keys."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    @property
    def quarantined(self) -> int:
        """How many stored objects are stand-ins (module docstring)."""
        return len(self._quarantined)

    # -- indexes ------------------------------------------------------------------------
    def add_indexers(self, indexers: Indexers) -> None:
        """Register more index functions; existing objects are indexed immediately.

        Raises ValueError when a name is already registered.
        """
        with self._lock:
            clash = set(indexers) & set(self._indexers)
            if clash:
                raise ValueError(f"indexer conflict: {sorted(clash)}")
            for name, fn in indexers.items():
                self._indexers[name] = fn
                index: dict[str, set[str]] = {}
                self._indices[name] = index
                for key, obj in self._items.items():
                    if key in self._quarantined:
                        continue
                    for value in fn(obj):
                        index.setdefault(value, set()).add(key)

    def get_indexers(self) -> Indexers:
        """A copy of the registered index functions."""
        with self._lock:
            return dict(self._indexers)

    def index(self, name: str, obj: RawObject) -> _Objects:
        """Objects sharing any of ``obj``'s values in index ``name``."""
        fn = self._indexer(name)
        values = fn(obj)
        with self._lock:
            index = self._indices[name]
            keys: set[str] = set()
            for value in values:
                keys |= index.get(value, set())
            return [self._items[k] for k in keys]

    def by_index(self, name: str, value: str) -> _Objects:
        """Objects filed under ``value`` in index ``name`` (KeyError: unknown index)."""
        self._indexer(name)
        with self._lock:
            keys = self._indices[name].get(value)
            if not keys:
                return []
            items = self._items
            return [items[k] for k in keys]

    def index_keys(self, name: str, value: str) -> _Keys:
        """Keys filed under ``value`` in index ``name``."""
        self._indexer(name)
        with self._lock:
            return list(self._indices[name].get(value, ()))

    def list_index_func_values(self, name: str) -> _Keys:
        """Every value index ``name`` currently has entries for."""
        self._indexer(name)
        with self._lock:
            return list(self._indices[name])

    def _indexer(self, name: str) -> IndexFunc:
        fn = self._indexers.get(name)
        if fn is None:
            raise KeyError(f"index {name!r} does not exist")
        return fn

    def _file(self, old: RawObject | None, new: RawObject | None, key: str) -> None:
        # Called with the lock held: ``new`` (None: deleted) replaced ``old`` under ``key``.
        if type(old) is _STAND_IN or type(new) is _STAND_IN:
            if type(new) is _STAND_IN:
                self._quarantined.add(key)
                new = None  # a stand-in is in no index
            else:
                self._quarantined.discard(key)
            if type(old) is _STAND_IN:
                old = None
        if self._indexers:
            self._update_indices(old, new, key)

    def _update_indices(self, old: RawObject | None, new: RawObject | None, key: str) -> None:
        # Called with the lock held.
        for name, fn in self._indexers.items():
            old_values = fn(old) if old is not None else []
            new_values = fn(new) if new is not None else []
            if old_values == new_values and old is not None and new is not None:
                continue  # the common update: same namespace, same owner
            index = self._indices[name]
            for value in old_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values:
                keys = index.get(value)
                if keys is None:
                    index[value] = {key}
                else:
                    keys.add(key)


# A Store is an Indexer that happens to have no indexes; one class serves both roles.
Store = Indexer
