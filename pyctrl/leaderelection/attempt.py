"""One attempt on the leader lock: read it, decide, write, and record what was observed.

:class:`LockAttempts` is the half of :class:`pyctrl.leaderelection.LeaderElector` that talks to
the lock; the elector (the campaign: acquire, lead, fence, release) runs it. Contract:

* :meth:`~LockAttempts._try_acquire_or_renew` answers whether this identity holds the lock
  after one attempt. While leading with a lease still valid by our own observation it writes
  the renewal straight from the cached record (no read); should that fail, or otherwise, it
  reads the lock: a missing lock is created, one held by another identity whose lease has not
  expired by our observation is left alone (False), else it is written with this identity
  (keeping the acquire time and transition count when it named us already, counting one
  more transition when it did not). Every API failure answers False (logged through the
  error sampler).
* Observation: the observed record and the monotonic time it was first *seen*; the time moves
  only when the record read differs. A write of ours is observed at the time the request was
  *sent*, and a renewing write (not while fenced) moves the last-renew time to it, waking the
  watchdog.
* :meth:`~LockAttempts._release` writes an empty holder with ``leaseDurationSeconds=1`` when
  the observed record names us (a failure is logged, never raised).
* :meth:`~LockAttempts._maybe_report_transition` calls ``on_new_leader`` once per new holder
  observed (a raising callback is logged).

Every field is guarded by the elector's ``_cond``; the attempt never holds it while calling
the lock or a callback.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import replace

import structlog

from pyctrl._errorlog import ErrorLog
from pyctrl.clock import Clock
from pyctrl.errors import ApiError, NotFound
from pyctrl.leaderelection.lock import LeaderElectionRecord, ResourceLock
from pyctrl.leaderelection.options import LeaderCallbacks, LeaderElectionOptions

__all__ = ["LockAttempts"]

log = structlog.get_logger("pyctrl.leaderelection.elector")


class LockAttempts:
    """Reads and writes of the lock, and the observation they leave (module docstring)."""

    config: LeaderElectionOptions
    _callbacks: LeaderCallbacks
    _clock: Clock
    _errors: ErrorLog
    _lock: ResourceLock
    _identity: str
    _cond: threading.Condition
    _observed: LeaderElectionRecord | None
    _observed_at: float
    _reported_leader: str
    _last_renew: float
    _leading: bool
    _fenced: bool

    def _set_observed(self, record: LeaderElectionRecord, at: float, *, renewed: bool) -> None:
        with self._cond:
            self._observed = record
            self._observed_at = at
            if renewed and not self._fenced:
                self._last_renew = at
                self._cond.notify_all()

    def _try_acquire_or_renew(self) -> bool:
        sent = self._clock.monotonic()
        now = self._clock.now()
        desired = LeaderElectionRecord(
            holder_identity=self._identity,
            lease_duration_seconds=math.ceil(self.config.lease_duration),
            acquire_time=now,
            renew_time=now,
        )
        with self._cond:
            observed, observed_at, leading = self._observed, self._observed_at, self._leading
        # Fast path: we lead and our lease is valid; update straight from the cached copy.
        if (
            leading
            and observed is not None
            and observed.holder_identity == self._identity
            and observed_at + observed.lease_duration_seconds > sent
        ):
            renewal = replace(
                desired,
                acquire_time=observed.acquire_time,
                leader_transitions=observed.leader_transitions,
            )
            try:
                self._lock.update(renewal)
            except ApiError as err:
                log.debug("fast-path renew failed; re-reading the lock", error=str(err))
            else:
                self._set_observed(renewal, sent, renewed=True)
                return True
        try:
            old = self._lock.get()
        except NotFound:
            return self._written(self._lock.create, desired, sent, "create")
        except ApiError as err:
            self._errors.failure("failed to read leader lock", err, level="info",
                                 lock=self._lock.describe())
            return False
        seen = self._clock.monotonic()
        with self._cond:
            if old != self._observed:
                self._observed = old
                self._observed_at = seen
            observed_at = self._observed_at
        if (
            old.holder_identity
            and old.holder_identity != self._identity
            and observed_at + old.lease_duration_seconds > seen
        ):
            return False  # held by someone else and not expired by our observation
        if old.holder_identity == self._identity:
            desired = replace(
                desired,
                acquire_time=old.acquire_time,
                leader_transitions=old.leader_transitions,
            )
        else:
            desired = replace(desired, leader_transitions=old.leader_transitions + 1)
        return self._written(self._lock.update, desired, sent, "update")

    def _written(self, write: Callable[[LeaderElectionRecord], object],
                 record: LeaderElectionRecord, sent: float, verb: str) -> bool:
        """``write(record)``; observed at ``sent`` as a renewal when it succeeded."""
        try:
            write(record)
        except ApiError as err:
            self._errors.failure(f"failed to {verb} leader lock", err, level="info",
                                 lock=self._lock.describe())
            return False
        self._set_observed(record, sent, renewed=True)
        return True

    def _release(self) -> None:
        with self._cond:
            observed = self._observed
        if observed is None or observed.holder_identity != self._identity:
            return
        now = self._clock.now()
        released = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            leader_transitions=observed.leader_transitions,
        )
        try:
            self._lock.update(released)
        except ApiError as err:
            log.warning("failed to release leader lease", lock=self._lock.describe(),
                        error=str(err))
            return
        self._set_observed(released, self._clock.monotonic(), renewed=False)
        log.info("released leader lease", lock=self._lock.describe())

    def _maybe_report_transition(self) -> None:
        with self._cond:
            holder = self._observed.holder_identity if self._observed else ""
            if not holder or holder == self._reported_leader:
                return
            self._reported_leader = holder
        log.info("new leader observed", lock=self._lock.describe(), leader=holder)
        try:
            self._callbacks.on_new_leader(holder)
        except Exception:
            log.exception("on_new_leader failed", lock=self._lock.describe())
