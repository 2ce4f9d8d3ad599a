"""PriorityQueue: a rate-limiting, delaying work queue that serves urgent items first, with aging.

Contract: everything :class:`~pyctrl.workqueue.rate_limiting.RateLimitingQueue` promises
(stingy, one worker per item, re-add while processing runs once more after ``done``,
``add_after``, ``add_rate_limited``/``forget``/``num_requeues``, ``shut_down(drain=...)``,
client-go's metric families), except that FIFO becomes "highest *effective* priority first":

* ``add(item, priority=NORMAL_PRIORITY)``, ``add_after(item, delay, priority=None)`` and
  ``add_rate_limited(item, priority=None)`` take an integer priority; higher is more urgent.
  ``None`` and the plain one-argument calls mean :data:`NORMAL_PRIORITY` (0), so code written
  for RateLimitingQueue works unchanged. :data:`LOW_PRIORITY` (-100) is what the event handlers
  use for objects from an informer's initial list and for resyncs (controller-runtime's
  values).
* Dedup never lowers: re-adding a queued item at a higher priority moves it up (it keeps its
  original queued time, so the wait it already did still counts); at an equal or lower
  priority it keeps its place. The same holds for an item re-added while it is processing
  (the highest priority of those re-adds is used when ``done`` queues it) and for a pending
  ``add_after`` (the highest priority is kept, the earliest ready time wins).
* Queued time ``q``: the clock time of the ``add`` (``add_after``: when its delay ran out;
  an item re-added while processing: the re-add, although it enters the queue only at
  ``done``, behind what was queued before that, as in Queue).
* Aging: an item with queued time ``q`` and priority ``p`` has, at time ``now``, the
  effective priority ``p + (now - q) * 100 / max_wait``: it gains 100 priority units (the gap
  from LOW to NORMAL) per ``max_wait`` seconds of waiting. Every queued item ages at the same
  rate, so the order never changes while items wait: items are handed out in increasing
  ``rank = q - p * max_wait / 100``; equal ranks go to the item that entered the queue first
  (a move-up keeps that place).
* The bound: a LOW item with queued time ``t`` is handed out before every NORMAL item whose
  queued time is ``>= t + max_wait`` (and before every later LOW item). So no load of NORMAL
  adds can starve it: its wait is at most ``max_wait`` plus the time the workers need to
  finish what is in flight and queued ahead of it at ``t + max_wait``. With one worker taking
  at most ``d`` clock seconds per item and at most ``B`` other items queued at any time, the
  wait is at most ``max_wait + (B + 1) * d`` (tests/unit/workqueue/test_priority.py checks
  this under a steady NORMAL load, and that the same load starves it without aging).
* ``max_wait`` (seconds of the queue's Clock, default :data:`DEFAULT_MAX_WAIT`) must be a
  positive finite number.

Data structure: a binary heap of ``(rank, order, slot)`` plus a dict from item to its live slot;
a move-up marks the old slot dead and pushes a new one (lazy deletion), so add/get/done are
O(log n). The hand-off to a parked consumer (see :mod:`pyctrl.workqueue.queue`) is kept: a
consumer parks only while nothing is queued, so handing it a new item never bypasses a more
urgent one. Metrics: as client-go (``workqueue_depth`` etc., no priority label), installed
only when a registry is given.

Shared code: this class overrides only Queue's order hooks (``_pop``, ``_queue_again``,
``__len__``), ``add`` (which takes a priority), the plain ``get`` and DelayingQueue's ``_ready``
(which re-adds at the stored priority); ``done``, the metered ``get``/``done``, the parking of
consumers and the delay heap are the base classes'.
"""

from __future__ import annotations

import heapq
import math
from typing import Generic, cast

from prometheus_client import CollectorRegistry

from pyctrl.clock import Clock
from pyctrl.workqueue.metrics import QueueMetrics
from pyctrl.workqueue.queue import T
from pyctrl.workqueue.rate_limiters import RateLimiter
from pyctrl.workqueue.rate_limiting import RateLimitingQueue

__all__ = ["DEFAULT_MAX_WAIT", "LOW_PRIORITY", "NORMAL_PRIORITY", "PriorityQueue"]

LOW_PRIORITY = -100
NORMAL_PRIORITY = 0
# Priority units an item gains per ``max_wait`` seconds of waiting: LOW -> NORMAL.
_SPAN = NORMAL_PRIORITY - LOW_PRIORITY
DEFAULT_MAX_WAIT = 30.0


class _Slot(Generic[T]):
    """One queued item; ``live`` is cleared when a move-up replaces it in the heap."""

    __slots__ = ("item", "live", "order", "priority", "queued_at")

    def __init__(self, item: T, priority: int, queued_at: float, order: int) -> None:
        self.item = item
        self.priority = priority
        self.queued_at = queued_at
        self.order = order  # when it entered the queue: breaks ties between equal ranks
        self.live = True


class PriorityQueue(RateLimitingQueue[T], Generic[T]):
    """A rate-limiting work queue ordered by aged priority (see module docstring)."""

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        rate_limiter: RateLimiter | None = None,
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> None:
        if not (max_wait > 0 and math.isfinite(max_wait)):
            raise ValueError(f"max_wait must be a positive number of seconds, not {max_wait!r}")
        self.max_wait = float(max_wait)
        # Set before super().__init__: it starts the delay waiter, which reads them.
        self._pheap: list[tuple[float, int, _Slot[T]]] = []
        self._queued: dict[T, _Slot[T]] = {}
        self._requeue: dict[T, tuple[float, int]] = {}  # dirty while processing
        self._pseq = 0
        self._delayed_priority: dict[T, int] = {}  # guarded by _delay_cond
        super().__init__(name=name, clock=clock, registry=registry, rate_limiter=rate_limiter)

    # -- helpers (caller holds _lock) ------------------------------------------------------
    def _rank(self, priority: int, queued_at: float) -> float:
        return queued_at - priority * self.max_wait / _SPAN

    def _push(self, item: T, priority: int, queued_at: float) -> None:
        self._pseq += 1
        slot = _Slot(item, priority, queued_at, self._pseq)
        self._queued[item] = slot
        heapq.heappush(self._pheap, (self._rank(priority, queued_at), self._pseq, slot))

    def _raise(self, item: T, priority: int) -> None:
        """``item`` is dirty: lift its pending priority to ``priority`` if that is higher."""
        slot = self._queued.get(item)
        if slot is None:
            queued_at, old = self._requeue[item]
            if priority > old:
                self._requeue[item] = (queued_at, priority)
        elif priority > slot.priority:
            rank = self._rank(priority, slot.queued_at)
            if rank == self._rank(slot.priority, slot.queued_at):
                slot.priority = priority  # same place in the order (float rounding)
                return
            slot.live = False
            new = _Slot(item, priority, slot.queued_at, slot.order)
            self._queued[item] = new
            heapq.heappush(self._pheap, (rank, slot.order, new))

    # -- the order hooks of Queue: done, the metered get/done and the parking are Queue's --
    def _pop(self) -> T:
        heap = self._pheap
        while True:
            slot = heapq.heappop(heap)[2]
            if slot.live:
                break
        item = slot.item
        del self._queued[item]
        self._dirty.remove(item)
        self._processing.add(item)
        return item

    def _queue_again(self, item: T) -> None:
        queued_at, priority = self._requeue.pop(item)
        self._push(item, priority, queued_at)

    # -- the metric-free path --------------------------------------------------------------
    def add(self, item: T, priority: int = NORMAL_PRIORITY) -> None:
        """Mark ``item`` as needing processing at ``priority`` (see module docstring)."""
        lock = self._lock
        lock.acquire()
        try:
            if self._shutting_down:
                return
            if item in self._dirty:
                self._raise(item, priority)
            elif item in self._processing:
                self._dirty.add(item)
                self._requeue[item] = (self._clock.monotonic(), priority)
            elif self._parked:
                self._processing.add(item)
                self._hand_off(item)
            else:
                self._dirty.add(item)
                self._push(item, priority, self._clock.monotonic())
        finally:
            lock.release()

    def get(self) -> T:
        """Block until an item is ready; return the one of highest effective priority."""
        lock = self._lock
        lock.acquire()
        try:
            if self._queued:
                return self._pop()
            parked = self._park()
        finally:
            lock.release()
        return self._wait(parked)

    # -- the metered twins -----------------------------------------------------------------
    def _add_metered(self, item: T, priority: int = NORMAL_PRIORITY) -> None:
        m = cast("QueueMetrics", self._metrics)
        with self._lock:
            if self._shutting_down:
                return
            if item in self._dirty:
                self._raise(item, priority)
                return
            m.adds.inc()
            now = self._clock.monotonic()
            if item in self._processing:
                self._dirty.add(item)
                self._requeue[item] = (now, priority)
                self._observe_waiting(item, now)
            elif self._parked:
                self._hand_off_metered(item, now)
            else:
                self._dirty.add(item)
                self._push(item, priority, now)
                self._observe_waiting(item, now)

    # -- delays and rate limiting ----------------------------------------------------------
    def add_after(self, item: T, delay: float, priority: int | None = None) -> None:
        """Add ``item`` at ``priority`` after ``delay`` clock seconds (at once if <= 0)."""
        if self._shutting_down:
            return
        p = NORMAL_PRIORITY if priority is None else priority
        if delay <= 0:
            self.add(item, p)
            return
        with self._delay_cond:
            old = self._delayed_priority.get(item)  # present exactly while item is pending
            self._delayed_priority[item] = p if old is None else max(old, p)
            self._delay(item, self._clock.monotonic() + delay)

    def _ready(self, item: T) -> None:
        self.add(item, self._delayed_priority.pop(item))

    def add_rate_limited(self, item: T, priority: int | None = None) -> None:
        """Add ``item`` at ``priority`` after the delay its limiter prescribes."""
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retries.inc()
        self.add_after(item, self.rate_limiter.when(item), priority)

    # -- introspection ---------------------------------------------------------------------
    def __len__(self) -> int:
        """How many items are queued, ready to be handed out."""
        return len(self._queued)

    def priority_of(self, item: T) -> int | None:
        """The priority ``item`` is queued (or re-queued after ``done``) at; None if neither."""
        with self._lock:
            slot = self._queued.get(item)
            if slot is not None:
                return slot.priority
            pending = self._requeue.get(item)
            return None if pending is None else pending[1]
