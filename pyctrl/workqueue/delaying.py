"""DelayingQueue: a :class:`~pyctrl.workqueue.queue.Queue` that can add an item later.

Contract (client-go's ``DelayingInterface``):

* ``add_after(item, delay)`` adds ``item`` once ``delay`` seconds of the queue's Clock have
  passed; ``delay <= 0`` adds at once. Adds after shutdown are ignored.
* One pending entry per item: re-adding with a *later* ready time never postpones the pending
  entry; an *earlier* ready time moves it earlier.
* Items whose times have come are added in ready-time order (ties: the order of the calls).
* ONE waiter thread owns the timer: it sleeps on a Condition through ``clock.wait`` until the
  earliest ready time (or until a new, earlier entry arrives), so a FakeClock drives it in
  tests. ``shut_down`` stops and joins it; entries still waiting are dropped.

Data structure: a binary heap of ``(ready_at, seq, entry)`` tuples (``seq`` breaks ties, so
entries are never compared) plus a dict from item to its live entry. Moving an entry earlier
marks the old one dead and pushes a new one (lazy deletion), so every operation is O(log n).
A subclass that carries more per pending item (PriorityQueue: its priority) keeps it beside
the heap under ``_delay_cond`` and overrides ``_ready``, the waiter's add of a ready item.
"""

from __future__ import annotations

import heapq
import threading
from typing import Generic

from prometheus_client import CollectorRegistry

from pyctrl.clock import Clock
from pyctrl.workqueue.queue import Queue, T

__all__ = ["DelayingQueue"]



class _Entry(Generic[T]):
    """One pending ``add_after``; ``live`` is cleared when a newer, earlier entry replaces it."""

    __slots__ = ("item", "live", "ready_at")

    def __init__(self, item: T, ready_at: float) -> None:
        self.item = item
        self.ready_at = ready_at
        self.live = True


class DelayingQueue(Queue[T], Generic[T]):
    """A work queue with ``add_after`` (see module docstring)."""

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, registry=registry)
        self._delay_cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, _Entry[T]]] = []
        self._waiting: dict[T, _Entry[T]] = {}
        self._seq = 0
        # Passes the waiter made over the heap; lets tests know it has seen a clock step.
        self._waiter_passes = 0
        self._start_thread(self._waiting_loop, "delay")

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` after ``delay`` clock seconds (at once when ``delay <= 0``)."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        with self._delay_cond:
            self._delay(item, self._clock.monotonic() + delay)

    def _delay(self, item: T, ready_at: float) -> None:
        """Make ``item`` pending until ``ready_at``, unless it is pending for an earlier time
        (caller holds ``_delay_cond``)."""
        old = self._waiting.get(item)
        if old is not None:
            if ready_at >= old.ready_at:
                return
            old.live = False
        self._seq += 1
        entry = _Entry(item, ready_at)
        self._waiting[item] = entry
        heapq.heappush(self._heap, (ready_at, self._seq, entry))
        if self._heap[0][2] is entry:
            # The waiter may be sleeping towards a later time: make it re-plan.
            self._delay_cond.notify()

    def _ready(self, item: T) -> None:
        """Add ``item``, whose time has come (the waiter calls it holding ``_delay_cond``)."""
        self.add(item)

    def _waiting_loop(self) -> None:
        heap = self._heap
        clock = self._clock
        with self._delay_cond:
            while not self._stop.is_set():
                now = clock.monotonic()
                while heap and (not heap[0][2].live or heap[0][0] <= now):
                    entry = heapq.heappop(heap)[2]
                    if entry.live:
                        del self._waiting[entry.item]
                        # Lock order delay -> queue; the queue never takes the delay lock.
                        self._ready(entry.item)
                self._waiter_passes += 1
                timeout = heap[0][0] - now if heap else None
                clock.wait(self._delay_cond, timeout)

    def _stop_threads(self) -> None:
        with self._delay_cond:
            self._stop.set()
            self._delay_cond.notify_all()
        super()._stop_threads()

    def _waiting_count(self) -> int:
        """How many items wait for their time (for tests and debugging)."""
        with self._delay_cond:
            return len(self._waiting)
