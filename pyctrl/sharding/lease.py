"""Shard Leases: each replica holds its own Lease; the sharder judges which shards are alive.

Contract:

* :class:`ShardLeaseLock` is a :class:`pyctrl.leaderelection.LeaseLock` on
  ``<lease_namespace>/<controller>-shard-<shard id>`` with identity ``<shard id>``, whose
  Lease is created carrying ``sharding.pyctrl.io/controller`` and ``sharding.pyctrl.io/shard``
  labels (updates keep them: the lock updates the Lease it last read). A
  :class:`pyctrl.leaderelection.LeaderElector` campaigns on it, so a shard renews, fences
  itself at its renew deadline, and releases (empty holder) on a clean stop exactly as a
  leader does.
* :class:`ShardMembership` is the observer's view. ``observe(lease)`` records, on the
  observer's own monotonic clock, when it saw the Lease's spec change (another host's
  renewTime is never compared with our clock, as in the elector); it returns whether the
  observation can change who is alive (a new Lease, another holder or duration, or a shard
  alive again after it expired), False for a renewal of a live shard, which only moves its
  expiry later. A shard is alive while its
  Lease's holder is its shard id and ``now < seen + leaseDurationSeconds``. A released
  (empty holder) or deleted Lease is dead at once. ``view()`` reads, at one instant, the
  alive shards and the monotonic time the first of them expires without news: a caller that
  plans with that set and wakes at that time never misses an expiry in between (the sharder
  does). ``alive()`` and ``next_expiry()`` (seconds from now) are its two halves.
  Thread-safe.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pyctrl.clock import Clock
from pyctrl.kube.interface import Client, RawObject
from pyctrl.leaderelection import LeaseLock
from pyctrl.sharding.options import LEASE_CONTROLLER_LABEL, LEASE_SHARD_LABEL, ShardingOptions

__all__ = ["ShardLeaseLock", "ShardMembership"]


class ShardLeaseLock(LeaseLock):
    """The Lease lock of one shard (see module docstring)."""

    def __init__(self, client: Client, options: ShardingOptions) -> None:
        super().__init__(client, options.lease_namespace, options.lease_name, options.shard_id,
                         labels={LEASE_CONTROLLER_LABEL: options.controller,
                                 LEASE_SHARD_LABEL: options.shard_id})
        self._options = options


@dataclass(frozen=True)
class _Seen:
    shard: str
    holder: str
    duration: float
    fingerprint: tuple[Any, ...]
    at: float


def _alive(seen: _Seen, now: float) -> bool:
    return seen.holder == seen.shard and now < seen.at + seen.duration


def _spec_fingerprint(lease: RawObject) -> tuple[Any, ...]:
    spec = lease.get("spec") or {}
    return (spec.get("holderIdentity"), spec.get("leaseDurationSeconds"),
            spec.get("renewTime"), spec.get("acquireTime"), spec.get("leaseTransitions"))


class ShardMembership:
    """Which shards are alive, judged on the observer's clock (see module docstring)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, _Seen] = {}  # by Lease name

    def observe(self, lease: RawObject) -> bool:
        """Record the Lease as seen now (its time only moves when its spec changed); whether
        that can change who is alive (see module docstring)."""
        meta = lease.get("metadata") or {}
        name = str(meta.get("name") or "")
        shard = str((meta.get("labels") or {}).get(LEASE_SHARD_LABEL) or "")
        if not name or not shard:
            return False
        spec = lease.get("spec") or {}
        fingerprint = _spec_fingerprint(lease)
        now = self._clock.monotonic()
        with self._lock:
            old = self._seen.get(name)
            at = old.at if old is not None and old.fingerprint == fingerprint else now
            new = self._seen[name] = _Seen(shard, str(spec.get("holderIdentity") or ""),
                                           float(spec.get("leaseDurationSeconds") or 0),
                                           fingerprint, at)
        if old is None:
            return True
        return ((old.shard, old.holder, old.duration) != (new.shard, new.holder, new.duration)
                or _alive(old, now) != _alive(new, now))

    def forget(self, lease: RawObject) -> None:
        """The Lease was deleted: its shard is dead."""
        name = str((lease.get("metadata") or {}).get("name") or "")
        with self._lock:
            self._seen.pop(name, None)

    def view(self) -> tuple[frozenset[str], float | None]:
        """The shards alive now, and the monotonic time the first of them expires without
        news (None when none is alive), both read at one instant of the clock."""
        now = self._clock.monotonic()
        with self._lock:
            live = [s for s in self._seen.values() if _alive(s, now)]
        return (frozenset(s.shard for s in live),
                min((s.at + s.duration for s in live), default=None))

    def alive(self) -> frozenset[str]:
        """The shard ids alive now."""
        return self.view()[0]

    def next_expiry(self) -> float | None:
        """Seconds until the first alive shard expires without news; None if none is alive."""
        now = self._clock.monotonic()
        at = self.view()[1]
        return None if at is None else max(0.0, at - now)
