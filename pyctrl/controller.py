"""Controller: N worker threads draining a rate-limited work queue into a Reconciler.

The reconcile contract (Request, Result, Reconciler, TerminalError) is :mod:`pyctrl.reconcile`'s;
this module runs it. ``Controller[T]`` is generic in what its queue holds, as
controller-runtime's ``TypedController[request]``: ``Controller[Request]`` is the norm, the
queue holds :class:`~pyctrl.reconcile.Request` values end to end and "key" below means the
request. The reconciler receives exactly what was queued (a ``Controller[str]`` takes a
``TypedReconciler[str]``); nothing is converted.

Contract:

* ``run(stop)`` waits until every ``wait_for`` object ``has_synced()`` (or ``stop``), starts
  ``workers`` threads named ``<name>-worker-<i>``, and returns once ``stop`` is set and every
  worker has finished its in-flight reconcile and exited. Keys still queued are not started
  after ``stop``. The queue is shut down when ``run`` returns, so a Controller runs once.
* A key is never reconciled by two workers at once (the queue is stingy); a key re-added while
  it is being reconciled runs again afterwards.
* Outcome rules (controller-runtime's):

  - returns None or ``Result()``      -> ``forget(key)``                     result=success
  - ``Result(requeue_after=d)``, d > 0 -> ``forget(key)`` + ``add_after(key, d)`` requeue_after
  - ``Result(requeue=True)``           -> ``add_rate_limited(key)``           result=requeue
  - raises :class:`TerminalError`      -> logged, counted, ``forget(key)``, not retried;
    an :class:`~pyctrl.errors.AlreadyOwned` (an owned object another controller, or nobody,
    controls) also records a Warning Event ``AlreadyOwned`` on the object that claimed it
    when the controller has a ``recorder`` (settable attribute; the Builder's
    ``with_options(recorder=)``)
  - raises :class:`~pyctrl.errors.NotLeader` (a fenced write: this replica's lease could not
    be renewed in time, so every key fails alike) -> ``add(key)`` with no backoff, held by
    the outage gate until the lease is renewed or leadership ends; logged through the
    sampler (:mod:`pyctrl._errorlog`: the key and object are not part of the signature), so
    a fencing episode costs a few lines carrying ``suppressed=N``, not one line per key
  - raises an error that means the API server could not answer (unreachable, restarting,
    overloaded: :mod:`pyctrl.availability`) -> logged, ``add(key)`` with no backoff and no
    token of the shared bucket, and the workers pause until the server answers (one probe
    reconcile at a time), then drain at full speed
  - raises anything else               -> logged with the key (:mod:`pyctrl._errorlog`: API
    errors as one line, tracebacks rate-limited), ``add_rate_limited(key)``
  - returns anything else (``return 30``, a ``Result`` whose ``requeue_after`` is not a
    finite number)                     -> logged with the key, ``add_rate_limited(key)``
    (all three are errors: result=error, ``controller_runtime_reconcile_errors_total``)

* Nothing a reconciler does kills a worker: every ``BaseException`` except ``SystemExit`` and
  ``KeyboardInterrupt`` is an error as above. Those two (a reconciler asking the process to
  end) requeue the key, are logged and end that worker. Every log line emitted during one
  reconcile carries ``controller``, ``key`` (``str(request)``) and a fresh ``reconcile_id``
  (structlog contextvars).
* A reconciler whose ``reconcile`` is a coroutine function is refused by the constructor
  (TypeError); each worker's reconciles see the ``stop`` Event as
  :func:`pyctrl.reconcile.stopping` (see :mod:`pyctrl.reconcile`).
* Liveness: :meth:`check` (a health check, ``fn() -> str | None``; the Manager registers it
  under ``/healthz``) fails once any worker thread has ended while the controller should be
  running (workers started, ``stop`` not set): a worker that died of a bug in the loop, or of
  ``SystemExit``, is logged at error level and makes the process unhealthy, so the kubelet
  restarts it instead of it idling with fewer (or no) workers.
* Metrics (label ``controller``): ``controller_runtime_reconcile_total{result}``,
  ``controller_runtime_reconcile_errors_total``,
  ``controller_runtime_terminal_reconcile_errors_total``,
  ``controller_runtime_reconcile_time_seconds``, ``controller_runtime_active_workers``,
  ``controller_runtime_max_concurrent_reconciles``; registered once per registry. pyctrl's
  own ``pyctrl_controller_first_reconcile_timestamp_seconds``: the wall-clock time (the
  Clock's ``time()``, unix seconds) at which the first reconcile of this Controller finished,
  whatever its outcome; 0 until then. Start-up time to first reconcile is it minus
  ``process_start_time_seconds`` (``python -m bench startup`` reads it); it costs one
  attribute test per reconcile.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from pyctrl._errorlog import ErrorLog
from pyctrl.availability import OutageGate
from pyctrl.clock import Clock, RealClock
from pyctrl.collectors import per_registry
from pyctrl.errors import AlreadyOwned, NotLeader, TerminalError
from pyctrl.ownerrefs import record_already_owned
from pyctrl.reconcile import _STOP, Result, TypedReconciler, refuse_coroutine
from pyctrl.record import EventRecorder
from pyctrl.workqueue import RateLimiter, RateLimitingQueue, ShutDown

__all__ = ["Controller", "HasSynced"]

log = structlog.get_logger(__name__)

# controller-runtime's reconcile_time_seconds buckets (5ms .. 60s).
_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60,
)
_SYNC_POLL_SECONDS = 0.05


# Reconcile IDs: a random per-process prefix and a counter. Unique within the process and,
# with 64 random bits, across replicas in practice; unlike uuid4 per reconcile no urandom
# syscall (which releases and re-takes the GIL) on every reconcile: the tick profile showed
# uuid4 in ~11% of the workers' samples with 16 workers contending for the GIL.
_RECONCILE_PREFIX = os.urandom(8).hex()
_reconcile_counter = itertools.count(1)


def _next_reconcile_id() -> str:
    """A fresh reconcile ID (``next`` on itertools.count is atomic, with or without a GIL)."""
    return f"{_RECONCILE_PREFIX}{next(_reconcile_counter):016x}"


class HasSynced(Protocol):
    """Anything a controller can wait on before starting (informers, listers)."""

    def has_synced(self) -> bool: ...


@dataclass(frozen=True)
class _Families:
    total: Counter
    errors: Counter
    terminal: Counter
    time: Histogram
    active: Gauge
    max_concurrent: Gauge
    first: Gauge


def _new_families(registry: CollectorRegistry | None) -> _Families:
    lbl = ["controller"]
    return _Families(
        total=Counter("controller_runtime_reconcile", "Total number of reconciliations per "
                      "controller", [*lbl, "result"], registry=registry),
        errors=Counter("controller_runtime_reconcile_errors", "Total number of reconciliation "
                       "errors per controller", lbl, registry=registry),
        terminal=Counter("controller_runtime_terminal_reconcile_errors", "Total number of "
                         "terminal reconciliation errors per controller", lbl,
                         registry=registry),
        time=Histogram("controller_runtime_reconcile_time_seconds", "Length of time per "
                       "reconciliation per controller", lbl, registry=registry,
                       buckets=_BUCKETS),
        active=Gauge("controller_runtime_active_workers", "Number of currently used workers "
                     "per controller", lbl, registry=registry),
        max_concurrent=Gauge("controller_runtime_max_concurrent_reconciles", "Maximum number "
                             "of concurrent reconciles per controller", lbl, registry=registry),
        first=Gauge("pyctrl_controller_first_reconcile_timestamp_seconds", "Unix time at "
                    "which the controller's first reconcile finished (0 until then)", lbl,
                    registry=registry),
    )


_metrics_for = per_registry(_new_families)

RequestT = TypeVar("RequestT", bound=Hashable)  # what a Controller's queue holds


class Controller(Generic[RequestT]):
    """Runs a reconciler over the requests in :attr:`queue` (see module docstring)."""

    def __init__(
        self,
        name: str,
        reconciler: TypedReconciler[RequestT],
        *,
        workers: int = 1,
        queue: RateLimitingQueue[RequestT] | None = None,
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        wait_for: Sequence[HasSynced] = (),
        gate: OutageGate | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        if queue is not None and rate_limiter is not None:
            raise ValueError("pass either queue or rate_limiter, not both")
        refuse_coroutine(reconciler.reconcile)
        self.name = name
        self.reconciler = reconciler
        self.workers = workers
        self.recorder = recorder
        self._clock: Clock = clock or RealClock()
        self.queue: RateLimitingQueue[RequestT] = queue if queue is not None else RateLimitingQueue(
            name=name, clock=self._clock, registry=registry, rate_limiter=rate_limiter
        )
        self._wait_for = list(wait_for)
        self._gate = gate if gate is not None else OutageGate(name, self._clock)
        self._errors = ErrorLog(log, self._clock)  # one line per API error, few tracebacks
        fam = _metrics_for(registry)
        self._m_success = fam.total.labels(name, "success")
        self._m_error = fam.total.labels(name, "error")
        self._m_requeue = fam.total.labels(name, "requeue")
        self._m_requeue_after = fam.total.labels(name, "requeue_after")
        self._m_errors = fam.errors.labels(name)
        self._m_terminal = fam.terminal.labels(name)
        self._m_time = fam.time.labels(name)
        self._m_active = fam.active.labels(name)
        fam.max_concurrent.labels(name).set(workers)
        self._m_first: Gauge | None = fam.first.labels(name)  # None once set
        self._started = False
        # Liveness bookkeeping (guarded by _mu): the worker threads and the stop event of the
        # current run, and why workers died.
        self._mu = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stop: threading.Event | None = None
        self._deaths: dict[str, str] = {}

    def check(self) -> str | None:
        """Health check: a reason when a worker ended while it should be running, else None."""
        with self._mu:
            stop, threads, deaths = self._stop, list(self._threads), dict(self._deaths)
        if stop is None or stop.is_set():
            return None
        dead = [t.name for t in threads if not t.is_alive()]
        if not dead:
            return None
        reasons = ", ".join(f"{name} ({deaths.get(name, 'exited')})" for name in dead)
        return (f"controller {self.name}: {len(dead)} of {len(threads)} worker threads "
                f"ended: {reasons}")

    def add_wait_for(self, synced: HasSynced) -> None:
        """Also wait for ``synced`` before starting workers (call before ``run``)."""
        self._wait_for.append(synced)

    def run(self, stop: threading.Event) -> None:
        """Wait for caches, run the workers until ``stop``, then drain and shut down."""
        if self._started:
            raise RuntimeError(f"controller {self.name} was already run")
        self._started = True
        bound = log.bind(controller=self.name)
        threads: list[threading.Thread] = []
        try:
            bound.info("waiting for caches to sync")
            while not all(s.has_synced() for s in self._wait_for):
                if stop.wait(_SYNC_POLL_SECONDS):
                    bound.info("stopped before caches synced")
                    return
            bound.info("starting workers", workers=self.workers)
            for i in range(self.workers):
                t = threading.Thread(
                    target=self._worker, args=(stop,), name=f"{self.name}-worker-{i}",
                    daemon=True,
                )
                threads.append(t)
                t.start()
            with self._mu:  # only started threads: a new Thread is not alive yet either
                self._threads, self._stop = list(threads), stop
            stop.wait()
            bound.info("stopping workers; waiting for in-flight reconciles")
        finally:
            # Wakes idle workers (get raises ShutDown) and those held by the outage gate;
            # busy ones finish their reconcile.
            self.queue.shut_down()
            self._gate.release()
            for t in threads:
                t.join()
            bound.info("all workers finished")

    def _worker(self, stop: threading.Event) -> None:
        _STOP.set(stop)  # pyctrl.stopping() in this worker's reconciles
        try:
            self._work(stop)
        except BaseException as err:  # a worker never dies silently
            name = threading.current_thread().name
            with self._mu:
                self._deaths[name] = f"{type(err).__name__}: {err}"
            if stop.is_set():
                log.warning("worker ended with an exception during shutdown",
                            controller=self.name, worker=name, exc_info=err)
            else:
                log.error("worker thread died; /healthz fails from now on",
                          controller=self.name, worker=name, exc_info=err)

    def _work(self, stop: threading.Event) -> None:
        while True:
            try:
                key = self.queue.get()
            except ShutDown:
                return
            try:
                if stop.is_set() or not self._gate.admit(stop):
                    return  # do not start new work after stop; the key stays unfinished
                self._process(key)
            finally:
                self.queue.done(key)

    def _process(self, key: RequestT) -> None:
        started = self._clock.monotonic()
        self._m_active.inc()
        with structlog.contextvars.bound_contextvars(
            controller=self.name, key=str(key), reconcile_id=_next_reconcile_id()
        ):
            try:
                result = _checked(self.reconciler.reconcile(key))
            except NotLeader as err:  # fenced: sampled, one line per key would flood
                if self._gate.failed(err, key):
                    self._errors.failure("reconcile refused: this replica's lease is not "
                                         "renewed (fenced); requeued until it is", err,
                                         level="warning")
                    self.queue.add(key)
                    self._count_error()
                else:
                    self._errors.failure("reconcile refused: this replica does not hold its "
                                         "lease (fenced); not retrying", err)
                    self._terminal(key)
            except TerminalError as err:
                self._gate.failed(err, key)
                log.error("reconcile failed with a terminal error; not retrying",
                          error=str(err))
                if isinstance(err, AlreadyOwned) and self.recorder is not None:
                    record_already_owned(self.recorder, err)
                self._terminal(key)
            except (SystemExit, KeyboardInterrupt) as err:
                # The reconciler asks the process to end: keep the key for whoever runs
                # next, then let this worker end (check() turns /healthz red).
                log.error("reconciler raised; ending this worker", error=repr(err))
                self._gate.failed(err, key)
                self._count_error()
                self.queue.add_rate_limited(key)
                raise
            except BaseException as err:  # nothing a reconciler raises kills a worker
                if self._gate.failed(err, key):
                    # The server's failure, not the item's: no backoff, no token; the gate
                    # holds the workers until the server answers (pyctrl.availability).
                    self._errors.failure("reconcile failed: the API server is unavailable; "
                                         "requeued until it answers", err, level="warning")
                    self.queue.add(key)
                else:
                    self._errors.failure("reconcile failed; requeueing with backoff", err,
                                         requeues=self.queue.num_requeues(key))
                    self.queue.add_rate_limited(key)
                self._count_error()
            else:
                self._gate.succeeded(key)
                self._handle_result(key, result)
            finally:
                self._m_active.dec()
                self._m_time.observe(max(0.0, self._clock.monotonic() - started))
                if self._m_first is not None:
                    self._first_done()

    def _first_done(self) -> None:
        """Record the first finished reconcile's time, once (workers may race here)."""
        with self._mu:
            first, self._m_first = self._m_first, None
        if first is not None:
            first.set(self._clock.time())

    def _terminal(self, key: RequestT) -> None:
        self._m_terminal.inc()
        self._count_error()
        self.queue.forget(key)

    def _count_error(self) -> None:
        self._m_errors.inc()
        self._m_error.inc()

    def _handle_result(self, key: RequestT, result: Result | None) -> None:
        if result is not None and result.requeue_after is not None and result.requeue_after > 0:
            self.queue.forget(key)
            self.queue.add_after(key, result.requeue_after)
            self._m_requeue_after.inc()
            log.debug("reconciled; requeue after", delay=result.requeue_after)
        elif result is not None and result.requeue:
            self.queue.add_rate_limited(key)
            self._m_requeue.inc()
            log.debug("reconciled; requeue with backoff")
        else:
            self.queue.forget(key)
            self._m_success.inc()
            log.debug("reconciled")


class InvalidResult(TypeError):
    """A reconciler returned something other than ``None`` or a well-formed :class:`Result`."""


def _checked(result: object) -> Result | None:
    """``result`` if it is None or a valid Result, else raise :class:`InvalidResult`."""
    if result is None:
        return None
    if not isinstance(result, Result):
        raise InvalidResult(
            f"reconcile must return None or Result, not {type(result).__name__}: {result!r}"
        )
    delay = result.requeue_after
    if delay is not None and (
        isinstance(delay, bool) or not isinstance(delay, int | float) or not math.isfinite(delay)
    ):
        raise InvalidResult(f"Result.requeue_after must be a finite number, not {delay!r}")
    if not isinstance(result.requeue, bool):
        raise InvalidResult(f"Result.requeue must be a bool, not {result.requeue!r}")
    return result
