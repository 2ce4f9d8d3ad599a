"""Sharder: assigns each sharded object to a live shard by label, with a drain handover.

Contract (run by the leader only, as a ``needs_leader`` Manager runnable):

* It watches this controller's shard Leases (by label, in ``lease_namespace``) into a
  :class:`ShardMembership`, and every object of ``resource`` (in ``namespaces``, or all)
  through its own informer that keeps only metadata (name, namespace, labels,
  resourceVersion): the leader's memory is O(objects' metadata), the shards' caches hold only
  their own objects.
* The ring is a :class:`HashRing` of the live shards. :func:`plan` decides per object, from its
  labels (current shard ``cur``, drain flag) and the ring's choice ``want``:

  - no live shard: nothing (objects keep their labels until a shard is back);
  - ``cur`` empty, or ``cur`` not alive (its Lease expired or was released): ``assign`` -
    set the shard label to ``want`` and drop any drain label, at once (a dead shard has
    fenced itself before its Lease expires, as a leader does);
  - ``cur`` alive, ``cur != want``, not draining: ``drain`` - set the drain label; the shard
    ``cur`` acknowledges by removing both labels when it has finished with the object (see
    :mod:`pyctrl.sharding.shard`), and the next pass assigns it to ``want``;
  - otherwise (in place, or waiting for an acknowledgement): nothing.

  So an object is never labelled for a new shard while its old shard is alive and has not
  let go: two shards never reconcile one object at once.
* Warm-up: for ``lease_duration`` after it starts, a sharder asks for no drain. It has just
  seen every Lease for the first time, so a shard that crashed long ago (its Lease still
  names it) counts as alive until then; planned moves towards it would only stall objects.
  Assignments (unlabelled objects, objects of shards already dead) are not held back.
* Writes of one pass go out at most ``options.writers`` at a time, assignments first (a dead
  shard's objects move in one burst, ahead of any planned drain). Every write is a merge
  patch of labels carrying the ``resourceVersion`` the sharder saw (a precondition: a
  Conflict means the object moved on, e.g. its shard just acknowledged; the next pass
  re-plans from newer state). Writes go through the leader-fenced client; the first one
  refused (NotLeader) ends the pass.
* A pass runs when a Lease or an object changed (coalesced: at most one pass per
  ``min_interval``), every ``resync`` seconds, and at the instant the first shard alive at the
  previous pass expires: that instant is read together with the alive set the pass planned
  with (:meth:`ShardMembership.view`), so an expiry during the pass's writes or its
  ``min_interval`` pause still gets its own pass at once, not at the next event or resync.
* Metrics-free; logs each pass that changed something (assigned, drained, failed counts and
  how long the writes took).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import structlog

from pyctrl.cache import DeletedFinalStateUnknown, ListWatch, SharedIndexInformer
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import ApiError, Conflict, NotFound, NotLeader
from pyctrl.kube.interface import Client, Object
from pyctrl.kube.resource import LEASES
from pyctrl.sharding.lease import ShardMembership
from pyctrl.sharding.options import ShardingOptions
from pyctrl.sharding.ring import HashRing

__all__ = ["Action", "Sharder", "plan"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Action:
    """One label write the sharder makes: ``assign`` to ``shard``, or ``drain``."""

    kind: Literal["assign", "drain"]
    namespace: str
    name: str
    resource_version: str
    shard: str  # the new shard (assign) or the one asked to let go (drain)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def _key(meta: Object) -> str:
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def plan(objects: Iterable[Object], ring: HashRing, alive: frozenset[str],
         options: ShardingOptions, *, drain: bool = True) -> list[Action]:
    """The label writes that move ``objects`` towards ``ring`` (see module docstring)."""
    if not len(ring):
        return []
    out: list[Action] = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        cur = str(labels.get(options.shard_label) or "")
        draining = bool(labels.get(options.drain_label))
        want = ring.shard_for(_key(meta))
        assert want is not None
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        rv = str(meta.get("resourceVersion") or "")
        if not cur or cur not in alive:
            out.append(Action("assign", ns, name, rv, want))
        elif drain and cur != want and not draining:
            out.append(Action("drain", ns, name, rv, cur))
    return out


def _metadata_only(obj: Object) -> Object:
    meta = obj.get("metadata") or {}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
            "metadata": {k: meta[k] for k in ("name", "namespace", "labels", "resourceVersion",
                                              "uid", "deletionTimestamp") if k in meta}}


class _Notify:
    """An informer handler that marks the sharder dirty (and feeds membership for Leases)."""

    def __init__(self, sharder: Sharder, membership: ShardMembership | None) -> None:
        self._sharder = sharder
        self._membership = membership

    def on_add(self, obj: Object, is_in_initial_list: bool) -> None:
        if self._membership is not None:
            self._membership.observe(obj)
        self._sharder.wake()

    def on_update(self, old: Object, new: Object) -> None:
        self.on_add(new, False)

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if self._membership is not None and last is not None:
            self._membership.forget(last)
        self._sharder.wake()


class Sharder:
    """Keeps every object labelled with a live shard (see module docstring)."""

    name = "sharder"

    def __init__(self, client: Client, options: ShardingOptions, *,
                 clock: Clock | None = None, min_interval: float = 0.1,
                 resync: float = 30.0) -> None:
        self._client = client
        self.options = options
        self._clock: Clock = clock or RealClock()
        self.membership = ShardMembership(self._clock)
        self._min_interval = min_interval
        self._resync = resync
        self._cond = threading.Condition(threading.Lock())
        self._dirty = True
        self._started = self._clock.monotonic()
        self._expires_at: float | None = None  # first expiry among the last pass's shards
        self._warm = False  # whether the last pass was past the warm-up (could drain)
        self._stop = threading.Event()  # run's stop
        self._halt = threading.Event()  # this pass found us deposed
        self.moves = 0  # assigned + drained, for tests and logs
        self.passes = 0

    def wake(self) -> None:
        """Something changed: run a pass soon."""
        with self._cond:
            self._dirty = True
            self._cond.notify_all()

    def _write(self, action: Action) -> str:
        o = self.options
        if self._stop.is_set() or self._halt.is_set():
            return "skipped"
        labels: dict[str, str | None]
        if action.kind == "assign":
            labels = {o.shard_label: action.shard, o.drain_label: None}
        else:
            labels = {o.drain_label: "true"}
        body: Object = {"metadata": {"resourceVersion": action.resource_version,
                                     "labels": labels}}
        try:
            self._client.patch(o.resource, action.name, body, action.namespace or None)
        except (Conflict, NotFound):
            return "skipped"  # moved on since we looked; the next pass sees the newer state
        except NotLeader:
            self._halt.set()  # deposed: leave the rest of the pass to the next leader
            return "skipped"
        except ApiError as err:
            log.warning("sharder write failed", key=action.key, action=action.kind,
                        error=str(err))
            return "failed"
        return "done"

    def sync(self, objects: Iterable[Object]) -> list[Action]:
        """One pass over ``objects``: plan and write; returns the actions that succeeded."""
        o = self.options
        alive, self._expires_at = self.membership.view()
        self.passes += 1
        self._halt.clear()
        start = self._clock.monotonic()
        warm = start - self._started >= o.lease_duration
        self._warm = warm
        actions = plan(objects, ring=HashRing(alive, o.virtual_nodes), alive=alive, options=o,
                       drain=warm)
        actions.sort(key=lambda a: a.kind != "assign")  # failover before planned moves
        if len(actions) > 1 and o.writers > 1:
            with ThreadPoolExecutor(min(o.writers, len(actions)),
                                    thread_name_prefix="sharder-write") as pool:
                results = list(pool.map(self._write, actions))
        else:
            results = [self._write(a) for a in actions]
        done = [a for a, r in zip(actions, results, strict=True) if r == "done"]
        failed = results.count("failed")
        if done or failed:
            self.moves += len(done)
            log.info("sharder pass", shards=sorted(alive),
                     assigned=sum(a.kind == "assign" for a in done),
                     drained=sum(a.kind == "drain" for a in done), failed=failed,
                     seconds=round(self._clock.monotonic() - start, 3))
        if failed:
            self.wake()
        return done

    def _informers(self) -> tuple[SharedIndexInformer, list[SharedIndexInformer]]:
        o = self.options
        leases = SharedIndexInformer(
            ListWatch(self._client, LEASES, o.lease_namespace, o.lease_selector),
            clock=self._clock, name=f"sharder-leases-{o.controller}")
        leases.add_event_handler(_Notify(self, self.membership))
        scopes: list[str | None] = list(o.namespaces) or [None]
        objects = [SharedIndexInformer(ListWatch(self._client, o.resource, ns),
                                       transform=_metadata_only, clock=self._clock,
                                       name=f"sharder-{o.resource.plural}@{ns or 'all'}")
                   for ns in scopes]
        for informer in objects:
            informer.add_event_handler(_Notify(self, None))
        return leases, objects

    def _next_due(self) -> float:
        """When the next pass is due without news: the first expiry among the shards the last
        pass planned with, and the end of the warm-up if that pass was still in it (either
        may be past already, if it came during the pass: then at once); else infinity."""
        due = float("inf") if self._expires_at is None else self._expires_at
        if not self._warm:
            due = min(due, self._started + self.options.lease_duration)
        return due

    def run(self, stop: threading.Event) -> None:
        """Watch Leases and objects and keep assigning until ``stop``."""
        leases, objects = self._informers()
        informers = [leases, *objects]
        done = threading.Event()  # stops the informers however we leave
        threads = [threading.Thread(target=i.run, args=(done,), name=f"informer-{i.name}",
                                    daemon=True) for i in informers]
        for t in threads:
            t.start()
        try:
            for informer in informers:
                if not informer.wait_for_sync(stop):
                    return
            self._started = self._clock.monotonic()
            log.info("sharder started", controller=self.options.controller)
            self._stop = stop
            while not stop.is_set():
                with self._cond:
                    self._dirty = False
                due = self._clock.monotonic() + self._resync
                self.sync([obj for i in objects for obj in i.get_store().list()])
                due = min(due, self._next_due())
                if self._clock.sleep(self._min_interval, stop):
                    break
                with self._cond:
                    while not self._dirty and not stop.is_set():
                        left = due - self._clock.monotonic()
                        if left <= 0:
                            break
                        self._clock.wait(self._cond, min(left, 0.5))  # 0.5 s: notice stop
        finally:
            done.set()
            for t in threads:
                t.join(5.0)
