"""Queue: client-go's work queue (``k8s.io/client-go/util/workqueue``) for threads.

Contract (the same as client-go's ``Typed[T]``):

* Fair: items are handed out in the order they were first added (FIFO).
* Stingy: an item is never handed to two workers at once. Adding an item that is already
  waiting collapses into the waiting entry (it keeps its place). Adding an item that a worker
  is processing marks it dirty; ``done`` then puts it back at the end of the queue, so the
  change is processed once more after the current run.
* Many producers and many consumers may call ``add``/``get``/``done`` from any thread.
* ``get`` blocks until an item is ready; once ``shut_down`` has been called it keeps handing
  out what is already queued and raises :class:`ShutDown` when nothing is left.
* ``shut_down()`` ignores later adds and wakes every blocked ``get``. ``shut_down(drain=True)``
  also blocks until every in-flight item (handed out, not yet ``done``) is done, as client-go's
  ``ShutDownWithDrain`` does; a concurrent ``shut_down()`` stops that wait.

State invariants (all under ``_lock``):

* ``_dirty`` holds every item that needs a run: each queued item, plus items re-added while
  they were processing. ``_queue`` holds, in order, the dirty items that are not processing.
* ``_parked`` (consumers blocked in ``get``) is non-empty only while ``_queue`` is empty.
  A producer with a ready item hands it straight to the longest-parked consumer (the item goes
  to ``_processing`` and the consumer's private lock is released): exactly one consumer wakes
  per item, and it does not need to take the queue lock again.

Performance: one lock round-trip per operation, no allocation on the non-blocking paths, no
notify when nobody waits. ``add`` of an item that is already dirty returns without taking the
lock: the membership test is atomic, and a dirty item is certain to be handed out (again)
after this moment, so collapsing into it is exactly what the locked path would do (if a
worker takes the item right after the test, that run starts after this ``add``). A producer
re-adding busy keys then never contends with the consumers for the lock. Metrics cost nothing
when no registry is given: the constructor installs metered versions of
``add``/``get``/``done`` on the instance only when metrics are on, so the plain methods carry
no metric checks at all. The two variants implement the same state machine; the tests run
both against one model.

Subclasses that hand items out in another order (:class:`pyctrl.workqueue.PriorityQueue`)
override the order hooks ``_pop``, ``_queue_again`` and ``__len__`` (and ``add``/``get``, whose
plain versions here inline the FIFO for speed); ``done``, the metered ``get``/``done`` and the
parking of consumers (``_park``, ``_wait``, ``_hand_off``) are shared.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, cast

from prometheus_client import CollectorRegistry

from pyctrl.clock import Clock, RealClock
from pyctrl.workqueue.metrics import QueueMetrics, queue_metrics

__all__ = ["Queue", "ShutDown"]

T = TypeVar("T", bound=Hashable)

# How often the unfinished-work gauges are refreshed (client-go: 500ms).
UNFINISHED_WORK_UPDATE_PERIOD = 0.5

_allocate_lock = threading.Lock


class ShutDown(Exception):
    """Raised by ``get`` once the queue is shut down and has nothing left to hand out."""


class _Parked:
    """A consumer blocked in ``get``: its private, pre-acquired lock and the item it gets."""

    __slots__ = ("item", "lock")

    def __init__(self) -> None:
        self.lock = _allocate_lock()
        self.lock.acquire()
        self.item: object = _SHUTDOWN


_SHUTDOWN = object()  # what a parked consumer receives when the queue shuts down


class Queue(Generic[T]):
    """A fair, stingy work queue for hashable keys (see module docstring)."""

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._parked: deque[_Parked] = deque()
        self._shutting_down = False
        self._drain = False
        self._drained = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._metrics: QueueMetrics | None = None
        self._add_times: dict[T, float] = {}
        self._start_times: dict[T, float] = {}
        if registry is not None:
            self._metrics = queue_metrics(registry, name)
            # Instance attributes shadow the class's metric-free methods.
            self.__dict__.update(
                add=self._add_metered, get=self._get_metered, done=self._done_metered
            )
            self._start_thread(self._unfinished_work_loop, "metrics")

    def _start_thread(self, target: Callable[[], None], role: str) -> None:
        t = threading.Thread(
            target=target,
            name=f"workqueue-{role}-{self.name or id(self)}",
            daemon=True,
        )
        self._threads.append(t)
        t.start()

    # -- the metric-free hot path ------------------------------------------------------
    # ``lock.acquire()`` + ``try/finally`` instead of ``with``: in CPython 3.11 the context
    # manager protocol costs more than the rest of an operation (see bench/workqueue.py).
    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing (see module docstring for collapsing)."""
        if item in self._dirty:
            # Collapses without the lock (see "Performance" in the module docstring).
            return
        lock = self._lock
        lock.acquire()
        try:
            if item in self._dirty or self._shutting_down:
                return
            if item in self._processing:
                self._dirty.add(item)
            elif self._parked:
                self._processing.add(item)
                self._hand_off(item)
            else:
                self._dirty.add(item)
                self._queue.append(item)
        finally:
            lock.release()

    def get(self) -> T:
        """Block until an item is ready and return it; the caller must call ``done``.

        Raises :class:`ShutDown` once the queue is shut down and empty.
        """
        lock = self._lock
        lock.acquire()
        try:
            if self._queue:
                item = self._queue.popleft()
                self._processing.add(item)
                self._dirty.remove(item)
                return item
            parked = self._park()
        finally:
            lock.release()
        return self._wait(parked)

    def done(self, item: T) -> None:
        """Finish processing ``item``; if it was re-added meanwhile, queue it again."""
        lock = self._lock
        lock.acquire()
        try:
            try:
                self._processing.remove(item)
            except KeyError:
                return  # not in flight: nothing to finish (and never queue it twice)
            if item in self._dirty:  # re-added while it was processing: queue it again
                self._queue_again(item)
                if self._parked:  # consumers park only while nothing is queued: it is next
                    self._hand_off(self._pop())
            elif self._drain and not self._processing:
                self._drained.notify_all()
        finally:
            lock.release()

    # -- the order hooks and the parking of consumers (all but ``_wait`` under ``_lock``) -----
    def _pop(self) -> T:
        """Move the next queued item to ``_processing`` and return it (something is queued)."""
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.remove(item)
        return item

    def _queue_again(self, item: T) -> None:
        """Queue ``item`` (dirty, just done) at the end: it was re-added while processing."""
        self._queue.append(item)

    def _hand_off(self, item: T) -> None:
        """Give ``item`` (already in ``_processing``) to the longest-parked consumer."""
        parked = self._parked.popleft()
        parked.item = item
        parked.lock.release()

    def _park(self) -> _Parked:
        """Register a consumer that found nothing queued; raise ShutDown when shutting down."""
        if self._shutting_down:
            raise ShutDown
        parked = _Parked()
        self._parked.append(parked)
        return parked

    def _wait(self, parked: _Parked) -> T:
        """Block (without ``_lock``) until ``parked`` is handed an item or the queue shuts down."""
        parked.lock.acquire()
        if parked.item is _SHUTDOWN:
            raise ShutDown
        return cast("T", parked.item)

    # -- the metered twins (installed by __init__ when a registry is given) -----------------
    # Not hot enough to hand-tune: ``with`` is fine here.
    def _add_metered(self, item: T) -> None:
        m = cast("QueueMetrics", self._metrics)
        with self._lock:
            if item in self._dirty or self._shutting_down:
                return
            m.adds.inc()
            now = self._clock.monotonic()
            if item in self._processing:
                self._dirty.add(item)
                self._observe_waiting(item, now)
            elif self._parked:
                self._hand_off_metered(item, now)
            else:
                self._dirty.add(item)
                self._queue.append(item)
                self._observe_waiting(item, now)

    def _get_metered(self) -> T:
        with self._lock:
            if len(self):
                item = self._pop()
                self._observe_handout(item)
                return item
            parked = self._park()
        return self._wait(parked)

    def _done_metered(self, item: T) -> None:
        m = cast("QueueMetrics", self._metrics)
        with self._lock:
            if item not in self._processing:
                return
            self._processing.remove(item)
            start = self._start_times.pop(item, None)
            if start is not None:
                m.work_duration.observe(self._clock.monotonic() - start)
            if item in self._dirty:
                self._queue_again(item)
                if self._parked:
                    item = self._pop()
                    self._observe_handout(item)
                    self._hand_off(item)
            elif self._drain and not self._processing:
                self._drained.notify_all()

    def _observe_waiting(self, item: T, now: float) -> None:
        """Metrics for an added item that now waits for a worker (caller holds ``_lock``)."""
        cast("QueueMetrics", self._metrics).depth.inc()
        self._add_times.setdefault(item, now)

    def _hand_off_metered(self, item: T, now: float) -> None:
        """Hand a new item straight to a parked consumer, with its metrics (under ``_lock``)."""
        cast("QueueMetrics", self._metrics).queue_duration.observe(0.0)
        self._start_times[item] = now
        self._processing.add(item)
        self._hand_off(item)

    def _observe_handout(self, item: T) -> None:
        """Metrics for a dirty item leaving for a worker (caller holds ``_lock``)."""
        m = cast("QueueMetrics", self._metrics)
        now = self._clock.monotonic()
        m.depth.dec()
        self._start_times[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            m.queue_duration.observe(now - added)

    def _update_unfinished_work(self) -> None:
        """Refresh the unfinished-work gauges from the in-flight start times."""
        m = cast("QueueMetrics", self._metrics)
        with self._lock:
            if self._shutting_down:
                return
            now = self._clock.monotonic()
            total = 0.0
            oldest = 0.0
            for start in self._start_times.values():
                age = now - start
                total += age
                oldest = max(oldest, age)
            m.unfinished_work.set(total)
            m.longest_running.set(oldest)

    def _unfinished_work_loop(self) -> None:
        while not self._clock.sleep(UNFINISHED_WORK_UPDATE_PERIOD, self._stop):
            self._update_unfinished_work()

    # -- the rest of the interface -------------------------------------------------------
    def __len__(self) -> int:
        """How many items are queued, ready to be handed out."""
        return len(self._queue)

    def shutting_down(self) -> bool:
        """True once ``shut_down`` has been called."""
        return self._shutting_down

    def shut_down(self, drain: bool = False) -> None:
        """Stop accepting adds and release blocked ``get`` calls (see module docstring).

        With ``drain=True`` block until every handed-out item is done. Idempotent; also stops
        and joins the queue's helper threads.
        """
        with self._lock:
            self._shutting_down = True
            self._drain = drain
            parked, self._parked = self._parked, deque()
            for p in parked:
                p.item = _SHUTDOWN
                p.lock.release()
            if drain:
                while self._drain and self._processing:
                    self._drained.wait()
            else:
                self._drained.notify_all()
        self._stop_threads()

    def _stop_threads(self) -> None:
        self._stop.set()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join()
