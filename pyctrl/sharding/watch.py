"""ShardWatch: what every replica of a sharded controller watches, leader or not.

Contract:

* It runs on every replica from the start (a Manager runnable without ``needs_leader``), as
  controller-runtime starts its caches on every replica and only the leader's runnables wait.
  A replica that becomes leader has watched the shard Leases all along, so its sharder plans
  at once with what it has observed. (A sharder that only started watching when it became
  leader would see every Lease for the first time then and count each as alive for one more
  lease duration: a killed leader's shard would move about a lease duration later than a
  killed non-leader's.)
* Informers, all through ``client`` (reads only):

  - the controller's shard Leases (``options.lease_selector`` in ``lease_namespace``) into
    :attr:`membership` (a :class:`ShardMembership` on ``clock``);
  - the leader Lease (the elector's :class:`LeaseLock`, by a field selector on its name), fed
    to ``elector.observe`` when an elector is given: a candidate then knows within a watch's
    latency when the leader last renewed, and its retry lands on the leader's expiry instead
    of up to a retry period after it (see :meth:`pyctrl.leaderelection.LeaderElector.observe`);
  - every object of ``resource`` in ``namespaces`` (or all), listed and watched metadata-only
    (``PartialObjectMetadata``: the server sends no spec or status, so a status write at a
    tick costs every replica a small event to decode, not a whole object), keeping only the
    metadata the sharder plans with (name, namespace, labels, resourceVersion, uid,
    deletionTimestamp, and with ``owned`` the handover annotation), typed as ``resource``:
    each replica's memory for this is O(objects' metadata), not O(objects).

* :meth:`subscribe` registers a callback run (on an informer thread, so it must be quick) for
  every shard Lease change that can change who is alive (a Lease added or deleted, another
  holder or duration, a shard alive again: :meth:`ShardMembership.observe`) and every object
  added, deleted or relabelled (its shard or drain label changed); the sharder's ``wake`` is
  one. A renewal of a live shard (each shard every retry period) and the leader Lease's
  renewals wake nobody: a renewal only moves an expiry later, and the sharder wakes at the
  first expiry instant on its own (it woke a pass over every object ~2 times a second at 3
  shards: 1.4 s of the leader's CPU in a 65 s window at 6000 CronJobs, ~0.09x a single
  replica's). Other object updates (status writes: thousands at
  a minute tick) wake nobody: a pass plans over every object, so one per status write made
  the leader's CPU at a tick of 6000 CronJobs 1.6x a non-leader's.
  The periodic resync pass still sees everything.
* :meth:`wake_on_change` is how the sharder asks to hear of the next change of objects it
  could not write: a label write refused by its ``resourceVersion`` precondition (Conflict,
  e.g. against a status write at a tick, which wakes nobody by itself) is re-planned as soon
  as this cache holds a newer version of the object - at once if it already does, else at
  that object's next update or delete. (Without it such an object waited for the resync:
  up to 30 s for a planned move, more if its next write was refused again.)
* :attr:`observing_since` is the monotonic time the Lease informer synced (None before): from
  then on membership has watched every Lease, and the sharder's warm-up counts from it.
* :meth:`wait_for_sync` returns True once every informer synced (False if ``stop`` came
  first); :meth:`objects` lists the cached objects' metadata. :meth:`run` runs the informers
  until ``stop``, once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from pyctrl.cache import (
    DeletedFinalStateUnknown,
    ListWatch,
    SharedIndexInformer,
    meta_namespace_key,
)
from pyctrl.clock import Clock, RealClock
from pyctrl.kube.interface import Client, RawObject
from pyctrl.kube.resource import LEASES, Resource
from pyctrl.leaderelection import LeaderElector, LeaseLock
from pyctrl.leaderelection.lease_lock import record_from_lease
from pyctrl.sharding.lease import ShardMembership
from pyctrl.sharding.options import ShardingOptions

__all__ = ["ShardWatch"]

_KEPT = ("name", "namespace", "labels", "resourceVersion", "uid", "deletionTimestamp")


def planned_metadata(resource: Resource, annotation: str | None = None
                     ) -> Callable[[RawObject], RawObject]:
    """An informer transform: an object (full or ``PartialObjectMetadata``) reduced to what
    the sharder plans with (and ``annotation``, the handover list, when given), typed as
    ``resource``."""
    api_version, kind = resource.api_version, resource.kind

    def reduce(obj: RawObject) -> RawObject:
        meta = obj.get("metadata") or {}
        kept = {k: meta[k] for k in _KEPT if k in meta}
        value = (meta.get("annotations") or {}).get(annotation) if annotation else None
        if value is not None:
            kept["annotations"] = {annotation: value}
        return {"apiVersion": api_version, "kind": kind, "metadata": kept}

    return reduce


class _Handler:
    """Feeds one informer's events to the watch's subscribers (and to ``on_object``)."""

    def __init__(self, watch: ShardWatch,
                 on_object: Callable[[RawObject], bool | None] | None = None,
                 on_gone: Callable[[RawObject], None] | None = None) -> None:
        self._watch = watch
        self._on_object = on_object
        self._on_gone = on_gone

    def on_add(self, obj: RawObject, is_in_initial_list: bool) -> None:
        if self._on_object is not None and self._on_object(obj) is False:
            return  # e.g. a live shard's renewal: nothing a pass would plan differently
        self._watch.notify()

    def on_update(self, old: RawObject, new: RawObject) -> None:
        if (self._on_object is None and not self._watch.moves_sharding(old, new)
                and not self._watch.awaited(new)):
            return  # e.g. a status write: nothing the sharder plans with changed
        self.on_add(new, False)

    def on_delete(self, obj: RawObject | DeletedFinalStateUnknown) -> None:
        last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if self._on_gone is not None and last is not None:
            self._on_gone(last)
        if self._on_object is None and last is not None:
            self._watch.awaited(last)
        self._watch.notify()


class ShardWatch:
    """Shard Leases, the leader Lease and the objects' metadata (see module docstring)."""

    name = "shard-watch"

    def __init__(self, client: Client, options: ShardingOptions, *,
                 clock: Clock | None = None, elector: LeaderElector | None = None) -> None:
        self.options = options
        self._clock: Clock = clock or RealClock()
        self.membership = ShardMembership(self._clock)
        self.observing_since: float | None = None
        self._subscribers: list[Callable[[], None]] = []
        self._awaited: dict[str, str] = {}  # key -> the resourceVersion a write was refused at
        self._lock = threading.Lock()
        self._synced = threading.Event()
        self._ran = False
        o = options
        self._leases = SharedIndexInformer(
            ListWatch(client, LEASES, o.lease_namespace, o.lease_selector),
            clock=self._clock, name=f"shard-leases-{o.controller}")
        # The registrations, not only the informers, are waited for: an informer is synced
        # when its store is, but its handlers run later on the processor thread, so a
        # Lease seen in the initial list could be observed (and its expiry counted) only
        # after the caller's clock moved on.
        self._registrations = [self._leases.add_event_handler(
            _Handler(self, self.membership.observe, self.membership.forget))]
        self._leader: SharedIndexInformer | None = None
        lock = elector.config.lock if elector is not None else None
        if elector is not None and isinstance(lock, LeaseLock):
            feed = elector.observe
            self._leader = SharedIndexInformer(
                ListWatch(client, LEASES, lock.namespace,
                          field_selector=f"metadata.name={lock.name}"),
                clock=self._clock, name=f"sharder-lease-{o.controller}")
            self._registrations.append(self._leader.add_event_handler(
                _Handler(self, lambda lease: feed(record_from_lease(lease)) or False)))
        scopes: list[str | None] = list(o.namespaces) or [None]
        reduce = planned_metadata(o.resource, o.handover_annotation if o.owned else None)
        self._objects = [SharedIndexInformer(ListWatch(client, o.resource, ns,
                                                       metadata_only=True),
                                             transform=reduce, clock=self._clock,
                                             name=f"shard-{o.resource.plural}@{ns or 'all'}")
                         for ns in scopes]
        for informer in self._objects:
            self._registrations.append(informer.add_event_handler(_Handler(self)))

    def moves_sharding(self, old: RawObject, new: RawObject) -> bool:
        """Whether an update of an object changes what the sharder plans with (its shard or
        drain label); a status write at a tick changes neither and wakes no pass."""
        o = self.options
        before = (old.get("metadata") or {}).get("labels") or {}
        after = (new.get("metadata") or {}).get("labels") or {}
        return any(before.get(k) != after.get(k) for k in (o.shard_label, o.drain_label))

    def wake_on_change(self, refused: Mapping[str, str]) -> None:
        """Notify the subscribers once the cache holds a newer version of any object in
        ``refused`` (key -> the ``resourceVersion`` a write was refused at) than the one named:
        at once if it already does (or the object is gone from it), else at its next update
        or delete. Registered before the cache is read, and the informer stores a version
        before it hands the event to the handlers, so no newer version is missed."""
        if not refused:
            return
        with self._lock:
            self._awaited.update(refused)
        moved = [k for k, rv in refused.items() if self._cached_version(k) != rv]
        if moved:
            with self._lock:
                for k in moved:
                    self._awaited.pop(k, None)
            self.notify()

    def awaited(self, obj: RawObject) -> bool:
        """Whether ``obj`` (an update or delete just seen) is one :meth:`wake_on_change` waits
        for (then forgotten: one wake per refused write)."""
        with self._lock:
            if not self._awaited:
                return False
            return self._awaited.pop(meta_namespace_key(obj), None) is not None

    def _cached_version(self, key: str) -> str | None:
        for informer in self._objects:
            obj = informer.get_store().get_by_key(key)
            if obj is not None:
                return str((obj.get("metadata") or {}).get("resourceVersion") or "")
        return None

    def subscribe(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` on every Lease or object change from now on."""
        with self._lock:
            self._subscribers.append(fn)

    def notify(self) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for fn in subscribers:
            fn()

    def objects(self) -> list[RawObject]:
        """The cached objects' metadata (see :func:`planned_metadata`)."""
        return [obj for informer in self._objects for obj in informer.get_store().list()]

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, stop: threading.Event) -> bool:
        """Block until every informer synced (True) or ``stop`` is set (False)."""
        while not self._synced.is_set():
            if stop.wait(0.05):
                return False
        return True

    def run(self, stop: threading.Event) -> None:
        """Run the informers until ``stop`` (once per ShardWatch)."""
        with self._lock:
            if self._ran:
                raise RuntimeError("a ShardWatch runs once")
            self._ran = True
        informers = [self._leases, *([self._leader] if self._leader else []), *self._objects]
        done = threading.Event()  # stops the informers however we leave
        threads = [threading.Thread(target=i.run, args=(done,), name=f"informer-{i.name}",
                                    daemon=True) for i in informers]
        for t in threads:
            t.start()
        try:
            if not self._leases.wait_for_sync(stop):
                return
            while not self._registrations[0].has_synced():  # the initial Leases observed
                if stop.wait(0.01):
                    return
            self.observing_since = self._clock.monotonic()
            for informer in informers:
                if not informer.wait_for_sync(stop):
                    return
            while not all(r.has_synced() for r in self._registrations):
                if stop.wait(0.01):
                    return
            self._synced.set()
            self.notify()
            stop.wait()
        finally:
            done.set()
            for t in threads:
                t.join(5.0)
