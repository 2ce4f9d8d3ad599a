"""Sharder: assigns each sharded object to a live shard by label, with a drain handover.

Contract (run by the leader only, as a ``needs_leader`` Manager runnable):

* It plans from a :class:`pyctrl.sharding.watch.ShardWatch` (the shard Leases in a
  :class:`ShardMembership`, every object's metadata): the Manager runs one on every replica
  from the start and hands it to the sharder, so a new leader plans at once with Leases it
  has watched all along. Without one given, the sharder runs its own inside :meth:`run`.
* The ring is a :class:`HashRing` of the live shards, this replica's own (the leader's)
  weighted by ``options.leader_weight``. :func:`plan` decides per object, from its
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
* Warm-up: for ``lease_duration`` after its watch began observing the Leases
  (``ShardWatch.observing_since``), a sharder asks for no drain. Until then a Lease seen for
  the first time counts as alive even if its shard crashed long ago (its Lease still names
  it); planned moves towards it would only stall objects. Assignments (unlabelled objects,
  objects of shards already dead) are not held back. A replica that became leader long
  after it started has no warm-up left.
* Writes of one pass go out at most ``options.writers`` at a time, assignments first (a dead
  shard's objects move in one burst, ahead of any planned drain). Every write is a merge
  patch of labels carrying the ``resourceVersion`` the sharder saw (a precondition: a
  Conflict means the object moved on, e.g. its shard just acknowledged; the next pass
  re-plans from newer state, which it runs as soon as the watch caches a newer version of a
  refused object: :meth:`ShardWatch.wake_on_change`; a status write alone wakes no pass).
  Writes go through the leader-fenced client; the first one refused (NotLeader) ends the
  pass. A pass with failed writes (an outage, a webhook down) is retried after a backoff
  (``FAILED_RETRY`` doubling to ``FAILED_RETRY_MAX`` while passes keep failing), not at once:
  during a 20 s outage the leader makes a few passes, not one per ``min_interval``.
* A pass runs when a Lease or an object changed (coalesced: at most one pass per
  ``min_interval``), every ``resync`` seconds, and at the instant the first shard alive at the
  previous pass expires: that instant is read together with the alive set the pass planned
  with (:meth:`ShardMembership.view`), so an expiry during the pass's writes or its
  ``min_interval`` pause still gets its own pass at once, not at the next event or resync.
* With ``options.owned`` (:mod:`pyctrl.sharding.owned`) an assignment carries the owner's
  handover list: the list already on it (an old shard's acknowledgement) merged with the
  owned objects still labelled for the owner's dead shard (one LIST per owned resource and
  namespace scope of those shards' labels, per pass that moves any) and, on a sweep (the
  first pass, then every ``resync``), owned objects with no shard label at all (created
  before Job sharding, or by hand). An owner in place with such unlabelled objects gets a
  ``handover`` write (the annotation only), so its shard adopts them. A failed LIST holds the
  dead shards' owners back until the next pass: moved without their list, the new shard
  could miss their active owned objects.
* Metrics-free; logs each pass that changed something (assigned, drained, failed counts and
  how long the writes took).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import structlog

from pyctrl.clock import Clock, RealClock
from pyctrl.errors import ApiError, Conflict, NotFound, NotLeader
from pyctrl.kube.interface import Client, RawObject
from pyctrl.sharding.lease import ShardMembership
from pyctrl.sharding.options import ShardingOptions
from pyctrl.sharding.owned import encode_handover, handover_of, owner_key, resource_key
from pyctrl.sharding.ring import HashRing
from pyctrl.sharding.watch import ShardWatch

__all__ = ["Action", "Sharder", "plan"]

log = structlog.get_logger(__name__)

FAILED_RETRY = 0.5  # seconds from a pass with failed writes to its retry; doubles per failure
FAILED_RETRY_MAX = 8.0


@dataclass(frozen=True)
class Action:
    """One write the sharder makes: ``assign`` to ``shard``, ``drain``, or ``handover``
    (only the handover annotation, on an owner that stays where it is)."""

    kind: Literal["assign", "drain", "handover"]
    namespace: str
    name: str
    resource_version: str
    shard: str  # the new shard (assign) or the one asked to let go (drain)
    previous: str = ""  # assign: the shard label it had (a dead shard's), if any
    handover: str | None = None  # the handover annotation to write with it
    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def _key(meta: RawObject) -> str:
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def plan(objects: Iterable[RawObject], ring: HashRing, alive: frozenset[str],
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
            out.append(Action("assign", ns, name, rv, want, previous=cur))
        elif drain and cur != want and not draining:
            out.append(Action("drain", ns, name, rv, cur))
    return out


class Sharder:
    """Keeps every object labelled with a live shard (see module docstring)."""

    name = "sharder"

    def __init__(self, client: Client, options: ShardingOptions, *,
                 watch: ShardWatch | None = None, clock: Clock | None = None,
                 min_interval: float = 0.1, resync: float = 30.0) -> None:
        self._client = client
        self.options = options
        self._clock: Clock = clock or RealClock()
        self._own_watch = watch is None
        self.watch = watch if watch is not None else ShardWatch(client, options,
                                                                clock=self._clock)
        self.watch.subscribe(self.wake)
        self.membership: ShardMembership = self.watch.membership
        self._min_interval = min_interval
        self._resync = resync
        self._cond = threading.Condition(threading.Lock())
        self._dirty = True
        self._started = self._clock.monotonic()
        self._expires_at: float | None = None  # first expiry among the last pass's shards
        self._warm = False  # whether the last pass was past the warm-up (could drain)
        self._planned_alive: frozenset[str] | None = None  # what the last pass planned with
        self._stop = threading.Event()  # run's stop
        self._halt = threading.Event()  # this pass found us deposed
        self._ring = HashRing((), options.virtual_nodes)  # kept while membership is unchanged
        self._swept_at: float | None = None  # last sweep for unlabelled owned objects
        self._retry_at: float | None = None  # a retry of failed writes (backoff)
        self._failed_passes = 0  # consecutive passes with failed writes
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
        meta: RawObject = {"resourceVersion": action.resource_version}
        if action.kind == "assign":
            meta["labels"] = {o.shard_label: action.shard, o.drain_label: None}
        elif action.kind == "drain":
            meta["labels"] = {o.drain_label: "true"}
        if action.handover is not None:
            meta["annotations"] = {o.handover_annotation: action.handover}
        body: RawObject = {"metadata": meta}
        try:
            self._client.patch(o.resource, action.name, body, action.namespace or None)
        except Conflict:
            return "conflict"  # moved on since we looked; re-planned once the watch has it
        except NotFound:
            return "skipped"  # deleted: its delete event wakes a pass
        except NotLeader:
            self._halt.set()  # deposed: leave the rest of the pass to the next leader
            return "skipped"
        except ApiError as err:
            log.warning("sharder write failed", key=action.key, action=action.kind,
                        error=str(err))
            return "failed"
        return "done"

    def sync(self, objects: Iterable[RawObject]) -> list[Action]:
        """One pass over ``objects``: plan and write; returns the actions that succeeded."""
        o = self.options
        alive, self._expires_at = self.membership.view()
        self._planned_alive = alive
        self.passes += 1
        self._halt.clear()
        start = self._clock.monotonic()
        warm = start - self._warm_from() >= o.lease_duration
        self._warm = warm
        if self._ring.shards != alive:
            self._ring = HashRing(alive, o.virtual_nodes, {o.shard_id: o.leader_weight})
        objects = list(objects)
        actions = plan(objects, ring=self._ring, alive=alive, options=o, drain=warm)
        listed = True  # with owned: whether the owned objects could be listed
        if o.owned:
            actions, listed = self._with_handover(objects, actions, start)
        actions.sort(key=lambda a: a.kind != "assign")  # failover before planned moves
        if len(actions) > 1 and o.writers > 1:
            with ThreadPoolExecutor(min(o.writers, len(actions)),
                                    thread_name_prefix="sharder-write") as pool:
                results = list(pool.map(self._write, actions))
        else:
            results = [self._write(a) for a in actions]
        done = [a for a, r in zip(actions, results, strict=True) if r == "done"]
        failed = results.count("failed")
        refused = {a.key: a.resource_version
                   for a, r in zip(actions, results, strict=True) if r == "conflict"}
        if done or failed or refused:
            self.moves += len(done)
            log.info("sharder pass", shards=sorted(alive),
                     assigned=sum(a.kind == "assign" for a in done),
                     drained=sum(a.kind == "drain" for a in done), failed=failed,
                     conflicts=len(refused),
                     seconds=round(self._clock.monotonic() - start, 3))
        if failed or not listed:
            self._retry_at = self._clock.monotonic() + min(
                FAILED_RETRY * 2 ** self._failed_passes, FAILED_RETRY_MAX)
            self._failed_passes += 1
        else:
            self._retry_at = None
            self._failed_passes = 0
        self.watch.wake_on_change(refused)
        return done

    def _with_handover(self, objects: list[RawObject], actions: list[Action], now: float
                       ) -> tuple[list[Action], bool]:
        """``actions`` with the owners' handover lists (see module docstring), and False when
        the owned objects could not be listed (the dead shards' owners are then left out)."""
        o = self.options
        dead = sorted({a.previous for a in actions if a.kind == "assign" and a.previous})
        sweep = self._swept_at is None or now - self._swept_at >= self._resync
        if not sweep and not any(a.kind == "assign" for a in actions):
            return actions, True  # the common pass: nothing moves, nothing to list
        selectors = ([f"{o.shard_label} in ({','.join(dead)})"] if dead else []) + (
            [f"!{o.shard_label}"] if sweep else [])
        found: dict[str, set[tuple[str, str]]] = {}
        scopes: list[str | None] = list(o.namespaces) or [None]
        try:
            for selector in selectors:
                for resource in o.owned:
                    for ns in scopes:
                        listed = self._client.list(resource, ns, label_selector=selector,
                                                   metadata_only=True)
                        for item in listed.get("items") or ():
                            owner = owner_key(item, o)
                            if owner is not None:
                                found.setdefault(owner, set()).add(
                                    (resource_key(resource),
                                     str((item.get("metadata") or {}).get("name"))))
        except ApiError as err:
            log.warning("sharder: listing owned objects failed; their owners wait",
                        shards=dead, error=str(err))
            # Retried after the failure backoff, like failed writes.
            return [a for a in actions if not (a.kind == "assign" and a.previous)], False
        if sweep:
            self._swept_at = now
        out: list[Action] = []
        by_key = {_key(obj.get("metadata") or {}): obj for obj in objects}
        for action in actions:
            obj = by_key.get(action.key)
            if action.kind != "assign" or obj is None:
                out.append(action)
                continue
            entries = handover_of(obj, o) | found.pop(action.key, set())
            out.append(dataclasses.replace(action, handover=encode_handover(entries))
                       if entries else action)
        for key, entries in found.items():  # unlabelled owned objects of owners in place
            obj = by_key.get(key)
            if obj is None or any(a.key == key for a in actions):
                continue  # no such owner (it goes with its objects), or it is draining
            meta = obj.get("metadata") or {}
            if not entries - handover_of(obj, o):
                continue
            out.append(Action("handover", str(meta.get("namespace") or ""),
                              str(meta.get("name")), str(meta.get("resourceVersion") or ""),
                              str((meta.get("labels") or {}).get(o.shard_label) or ""),
                              handover=encode_handover(entries | handover_of(obj, o))))
        return out, True

    def _warm_from(self) -> float:
        """Since when membership has watched every Lease: the warm-up's start."""
        since = self.watch.observing_since
        return self._started if since is None else since

    def _next_due(self) -> float:
        """When the next pass is due without news: the first expiry among the shards the last
        pass planned with, the retry of a pass with failed writes, and the end of the warm-up
        if that pass was still in it (any may be past already, if it came during the pass:
        then at once); else infinity."""
        due = float("inf") if self._expires_at is None else self._expires_at
        if self._retry_at is not None:
            due = min(due, self._retry_at)
        if not self._warm:
            due = min(due, self._warm_from() + self.options.lease_duration)
        return due

    def _renewed_due(self, resync_due: float) -> float | None:
        """At an expiry instant: None if a pass is due (a shard expired since the last pass,
        the warm-up is over, a failed pass's retry or the resync came); else the next due
        instant, every shard the last pass planned with having renewed since (renewals wake
        no pass)."""
        now = self._clock.monotonic()
        if not self._warm or now >= resync_due or (
                self._retry_at is not None and now >= self._retry_at):
            return None
        alive, expires_at = self.membership.view()
        if alive != self._planned_alive or expires_at is None:
            return None
        self._expires_at = expires_at
        return min(resync_due, self._next_due())

    def run(self, stop: threading.Event) -> None:
        """Plan and write until ``stop``, from the watch (run here if the sharder owns it)."""
        done = threading.Event()  # stops an own watch however we leave
        thread: threading.Thread | None = None
        if self._own_watch:
            thread = threading.Thread(target=self.watch.run, args=(done,),
                                      name="sharder-watch", daemon=True)
            thread.start()
        try:
            if not self.watch.wait_for_sync(stop):
                return
            self._started = self._clock.monotonic()
            log.info("sharder started", controller=self.options.controller,
                     warm_up_left=round(max(0.0, self._warm_from() + self.options.lease_duration
                                            - self._started), 3))
            self._stop = stop
            while not stop.is_set():
                with self._cond:
                    self._dirty = False
                resync_due = self._clock.monotonic() + self._resync
                self.sync(self.watch.objects())
                due = min(resync_due, self._next_due())
                if self._clock.sleep(self._min_interval, stop):
                    break
                with self._cond:
                    while not self._dirty and not stop.is_set():
                        left = due - self._clock.monotonic()
                        if left <= 0:
                            later = self._renewed_due(resync_due)
                            if later is None:
                                break
                            due = later
                            continue
                        self._clock.wait(self._cond, min(left, 0.5))  # 0.5 s: notice stop
        finally:
            done.set()
            if thread is not None:
                thread.join(10.0)
