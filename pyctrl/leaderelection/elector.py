"""LeaderElector: campaign for a lock, renew it, and fence ourselves when renewing fails.

Contract and invariants:

* Expiry is judged only by locally observed time. A candidate records, with its own monotonic
  clock, when it *saw* the record change; it may take the lock once the holder is empty or
  ``leaseDurationSeconds`` passed since that observation. renewTime written by another host is
  never compared with our clock.
* A candidate retries every ``retry_period`` (jittered), but never later than the instant the
  observed holder's lease expires by its observation, so it takes over right at the expiry.
  :meth:`LeaderElector.observe` feeds it records seen elsewhere (a watch of the Lease, as
  :class:`pyctrl.sharding.ShardWatch` does): the observation is then as fresh as the watch,
  not up to a retry period old.
* Fencing: the leader notes the monotonic time each successful acquire/renew request was *sent*
  (the server stored it no earlier, so others saw it no earlier). A watchdog thread steps down
  as soon as ``renew_deadline`` passes since then without a new success, even if a renew call
  hangs: it sets the leading stop event and calls ``on_stopped_leading``. Since
  ``renew_deadline < lease_duration``, that happens before any other replica may acquire.
* Write fence: :meth:`holds_lease` is true only while leading (not fenced, not released) and
  ``monotonic() < sent time of the last successful acquire/renew + renew_deadline``, judged
  at the moment it is called; it does not wait for the watchdog. A leader-scoped client
  (:class:`pyctrl.kube.FencedClient`) asks it just before each write, so a replica that was
  frozen (SIGSTOP, a VM pause, a long GC) past its renew deadline refuses its writes on
  resume, before any thread of it could learn that someone else leads.
* Clean stop (``stop`` set while leading): the leading stop event is set, the elector keeps
  renewing until ``on_started_leading`` returns (so in-flight work still runs under a valid
  lease), then, with ``release_on_cancel``, writes an empty holder with
  ``leaseDurationSeconds=1`` and finally calls ``on_stopped_leading``.
* ``run`` campaigns once: after leadership ends (a fenced leader notices at its next retry
  tick) it returns; callers restart the process (as
  controller-runtime does) rather than re-campaign.
* ``regain_after_fence``: the watchdog fences as above (writes refused) but leadership does
  not end: every retry period the elector reads the lock, and renews it when it still names
  this identity (nobody acquired it since: the update carries the resourceVersion it read,
  so a concurrent acquire makes it fail), lifting the fence. Leadership ends, as above, only
  when the lock is seen held by another identity. A replica cut off from the API server (a
  restart, an outage) thus takes up its work within a retry period of the server's return,
  where a restarted process would wait out the lease.
* Metric ``leader_election_master_status{name}`` is 1 while leading, else 0.
* One attempt on the lock (read, decide, write, observe) is the contract of
  :mod:`pyctrl.leaderelection.attempt` (:class:`LockAttempts`, which this class extends).
"""

from __future__ import annotations

import math
import random
import threading

import structlog
from prometheus_client import CollectorRegistry, Gauge

from pyctrl._errorlog import ErrorLog
from pyctrl.clock import Clock, RealClock
from pyctrl.collectors import per_registry
from pyctrl.leaderelection.attempt import LockAttempts
from pyctrl.leaderelection.lock import LeaderElectionRecord, ResourceLock
from pyctrl.leaderelection.options import LeaderCallbacks, LeaderElectionOptions

__all__ = ["LeaderElector"]

log = structlog.get_logger(__name__)

# A retry scheduled at the observed expiry lands this much after it (clock granularity).
_EXPIRY_MARGIN = 0.01

def _new_master_status(registry: CollectorRegistry | None) -> Gauge:
    return Gauge(
        "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
        "backup, 1 indicates master. 'name' is the string used to identify the lease.",
        ["name"],
        registry=registry,
    )


# The gauge family for a registry (registered once per registry), or a private one.
_master_status = per_registry(_new_master_status)


class LeaderElector(LockAttempts):
    """Runs one leader-election campaign over ``config.lock`` (see module docstring; a
    ``config`` without a lock is refused: :meth:`LeaderElectionOptions.with_lock` sets one)."""

    def __init__(
        self,
        config: LeaderElectionOptions,
        callbacks: LeaderCallbacks,
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        health_tolerance: float = 20.0,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._callbacks = callbacks
        self._clock: Clock = clock or RealClock()
        self._errors = ErrorLog(log, self._clock)  # an outage: a few lines per error kind
        if config.lock is None:
            raise ValueError("the elector needs config.lock (LeaderElectionOptions.with_lock)")
        self._lock: ResourceLock = config.lock
        self._identity = config.lock.identity()
        self._rng = rng or random.Random()
        self._health_tolerance = health_tolerance
        self._gauge = _master_status(registry).labels(name=config.id)
        self._gauge.set(0)
        # Guarded by _cond: observation state, renew bookkeeping and leading flags.
        self._cond = threading.Condition(threading.Lock())
        self._observed: LeaderElectionRecord | None = None
        self._observed_at = 0.0
        self._reported_leader = ""
        self._last_renew = 0.0
        self._leading = False  # we hold the lock and have not been fenced
        self._in_leading_phase = False  # between acquire and the end of _lead
        self._fenced = False
        self._watchdog_stop = False

    # -- queries ------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True while this elector holds the lock and has not stepped down."""
        with self._cond:
            return self._leading

    def holds_lease(self) -> bool:
        """True while this replica may write as the leader (see "Write fence" above)."""
        with self._cond:
            if not self._leading:
                return False
            deadline = self._last_renew + self.config.renew_deadline
        return self._clock.monotonic() < deadline

    def describe(self) -> str:
        """The lock this elector campaigns on (for messages)."""
        return self._lock.describe()

    def get_leader(self) -> str:
        """The holder identity last observed ("" when none or unknown)."""
        with self._cond:
            return self._observed.holder_identity if self._observed else ""

    def check(self) -> str | None:
        """Health check: an error message when we are (or were, and are stuck) leading and
        the last successful renew is older than renew deadline + tolerance; else None."""
        with self._cond:
            if not self._in_leading_phase:
                return None
            overdue = self._clock.monotonic() - (
                self._last_renew + self.config.renew_deadline + self._health_tolerance
            )
        if overdue > 0:
            return (
                f"failed election to renew leadership on lease {self._lock.describe()}: "
                f"overdue by {overdue:.1f}s"
            )
        return None

    # -- the campaign -------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Acquire, lead until ``stop`` or a failed renew, then return (see docstring)."""
        bound = log.bind(lock=self._lock.describe(), identity=self._identity)
        try:
            if not self._acquire(stop):
                return
            bound.info("acquired lease")
            self._lead(stop)
        finally:
            self._gauge.set(0)

    def _acquire(self, stop: threading.Event) -> bool:
        log.info("attempting to acquire leader lease", lock=self._lock.describe())
        while not stop.is_set():
            ok = self._try_acquire_or_renew()
            self._maybe_report_transition()
            if ok:
                return True
            low = self.config.retry_period
            wait = low + self._rng.random() * (self.config.jitter_factor - 1.0) * low
            if self._clock.sleep(min(wait, self._until_expiry()), stop):
                break
        return False

    def _until_expiry(self) -> float:
        """Seconds until the observed holder's lease expires by our observation, when that is
        still ahead (a retry then lands on it, not up to a retry period later); else inf."""
        with self._cond:
            observed, observed_at = self._observed, self._observed_at
        if observed is None or not observed.holder_identity:
            return math.inf
        left = observed_at + observed.lease_duration_seconds - self._clock.monotonic()
        return left + _EXPIRY_MARGIN if left > 0 else math.inf

    def observe(self, record: LeaderElectionRecord) -> None:
        """Take the lock's record as seen elsewhere now (e.g. a watch of the Lease).

        The same rule as the elector's own reads: the observation time moves only when the
        record changed. A candidate fed by a watch knows within milliseconds when the holder
        last renewed, so its retry lands right at the expiry instead of up to a retry period
        after it. Safe: a watch delivers a change no earlier than the server stored it, as a
        GET does. Ignored while this elector leads (its own writes are the record)."""
        seen = self._clock.monotonic()
        with self._cond:
            if self._in_leading_phase or record == self._observed:
                return
            self._observed = record
            self._observed_at = seen

    def _lead(self, stop: threading.Event) -> None:
        leading_stop = threading.Event()
        callback_done = threading.Event()
        with self._cond:
            self._leading = True
            self._in_leading_phase = True
            self._fenced = False
            self._watchdog_stop = False
        self._gauge.set(1)
        name = self.config.id or self._lock.describe()
        callback = threading.Thread(
            target=self._run_started, args=(leading_stop, callback_done),
            name=f"leader-{name}-leading", daemon=True,
        )
        watchdog = threading.Thread(
            target=self._watchdog, args=(leading_stop,), name=f"leader-{name}-watchdog",
            daemon=True,
        )
        callback.start()
        watchdog.start()
        regain = self.config.regain_after_fence
        try:
            # Leading: renew every retry period until asked to stop or fenced (with
            # regain_after_fence: until another holder is seen while fenced).
            while regain or not self._is_fenced():
                if self._clock.sleep(self.config.retry_period, stop):
                    break
                if not self._is_fenced():
                    self._renew_once()
                elif not regain or not self._regain():
                    break
            # Clean stop: let the workers finish while the lease is still ours.
            if not self._is_fenced():
                leading_stop.set()
                while not self._is_fenced() and not callback_done.is_set():
                    if self._clock.sleep(self.config.retry_period, callback_done):
                        break
                    if not self._is_fenced():
                        self._renew_once()
        finally:
            with self._cond:
                self._watchdog_stop = True
                self._cond.notify_all()
            watchdog.join()
            leading_stop.set()
            fenced = self._is_fenced()
            if fenced and regain:  # the watchdog left stepping down to us
                if not stop.is_set():
                    log.error("leader lease held by another replica; stepping down",
                              lock=self._lock.describe(), holder=self.get_leader())
                self._gauge.set(0)
                callback.join()
                self._call_stopped()
            elif not fenced:
                callback.join()
                with self._cond:  # fence writes before the lease is given away
                    self._leading = False
                if self.config.release_on_cancel:
                    self._release()
                self._gauge.set(0)
                self._call_stopped()
            else:
                callback.join()
            with self._cond:
                self._in_leading_phase = False

    def _regain(self) -> bool:
        """One attempt to take the lease back while fenced (regain_after_fence); False once
        another holder is seen (leadership is lost), True otherwise (regained, or no answer:
        try again)."""
        ok = self._try_acquire_or_renew()
        self._maybe_report_transition()
        if ok:
            with self._cond:
                self._fenced = False
                self._leading = True
                self._last_renew = self._observed_at  # the send time of the write
                self._cond.notify_all()
            self._gauge.set(1)
            log.info("leader lease renewed after being fenced; writes allowed again",
                     lock=self._lock.describe())
            return True
        with self._cond:
            holder = self._observed.holder_identity if self._observed else ""
        return not holder or holder == self._identity

    def _renew_once(self) -> None:
        ok = self._try_acquire_or_renew()
        self._maybe_report_transition()
        if not ok:
            log.warning("failed to renew lease", lock=self._lock.describe())

    def _is_fenced(self) -> bool:
        with self._cond:
            return self._fenced

    def _run_started(self, leading_stop: threading.Event, done: threading.Event) -> None:
        try:
            self._callbacks.on_started_leading(leading_stop)
        except Exception:
            log.exception("on_started_leading failed", lock=self._lock.describe())
        finally:
            done.set()

    def _call_stopped(self) -> None:
        log.info("stopped leading", lock=self._lock.describe(), identity=self._identity)
        try:
            self._callbacks.on_stopped_leading()
        except Exception:
            log.exception("on_stopped_leading failed", lock=self._lock.describe())

    def _watchdog(self, leading_stop: threading.Event) -> None:
        regain = self.config.regain_after_fence
        with self._cond:
            while not self._watchdog_stop:
                now = self._clock.monotonic()  # (read first: a FakeClock wait needs it)
                if self._fenced:  # regain mode: wait until _regain lifts the fence
                    self._clock.wait(self._cond, None)
                    continue
                remaining = self._last_renew + self.config.renew_deadline - now
                if remaining <= 0:
                    self._fenced = True
                    self._leading = False
                    if not regain:
                        break
                    self._gauge.set(0)
                    log.error("leader lease not renewed within the renew deadline; writes "
                              "fenced until it is renewed or another replica holds it",
                              lock=self._lock.describe(),
                              renew_deadline=self.config.renew_deadline)
                    continue
                self._clock.wait(self._cond, remaining)
            fenced = self._fenced and not regain
        if fenced:
            log.error(
                "leader lease not renewed within the renew deadline; stepping down",
                lock=self._lock.describe(), renew_deadline=self.config.renew_deadline,
            )
            leading_stop.set()
            self._gauge.set(0)
            self._call_stopped()
