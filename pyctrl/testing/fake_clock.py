"""FakeClock: a :class:`pyctrl.clock.Clock` whose time moves only when a test says so.

Contract:

* Time starts at the given instant and changes only through ``step``/``set_time``.
* ``step``/``set_time`` wake every thread blocked in ``wait`` or ``sleep`` on this clock, which
  then re-checks its own deadline against the new time. Time never goes backwards unless
  ``set_time`` is asked to move it back (useful to test clock jumps).
* ``waiters()`` tells how many threads are blocked on the clock, so a test can wait until a
  component is parked before stepping (the equivalent of client-go's ``HasWaiters``).
* No lost wake-up: ``wait`` returns at once (a spurious wake-up) when the clock moved after
  the calling thread last read it (``now``/``time``/``monotonic``). A caller reads the time,
  works out how long to wait and then waits; a step that lands in between found it not yet
  registered, so without this check it would sleep on a stale deadline until the next step.

Lock order: a waiter holds its own Condition and then takes the clock's lock to register;
``step`` takes the clock's lock only to copy the waiter list, releases it, and then takes each
waiter's Condition to notify it. No thread ever holds the clock lock while acquiring a
waiter's Condition, so the two can not deadlock.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

__all__ = ["FakeClock"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Event-based sleeps cannot be woken by Event.set() through the clock, so they poll the stop
# event at this real-time interval. It bounds only how fast a fake sleep notices ``stop``.
_STOP_POLL_SECONDS = 0.005


class FakeClock:
    """A manually driven clock for tests (see module docstring)."""

    def __init__(self, start: datetime | None = None) -> None:
        if start is None:
            start = datetime(2026, 1, 1, tzinfo=UTC)
        if start.tzinfo is None:
            raise ValueError("FakeClock start time must be timezone-aware")
        self._lock = threading.Lock()
        self._now = start.astimezone(UTC)
        self._mono = 1000.0
        self._waiters: dict[int, threading.Condition] = {}
        self._next_id = 0
        self._changed = threading.Condition(threading.Lock())
        # Name-mangled: subclasses (tests probe the clock) keep their own attribute names.
        self.__generation = 0  # bumped by every step/set_time
        self.__readers = threading.local()  # .generation: what this thread last read the time at

    # -- readings -----------------------------------------------------------------------
    def now(self) -> datetime:
        with self._lock:
            self.__readers.generation = self.__generation
            return self._now

    def time(self) -> float:
        with self._lock:
            self.__readers.generation = self.__generation
            return (self._now - _EPOCH).total_seconds()

    def monotonic(self) -> float:
        with self._lock:
            self.__readers.generation = self.__generation
            return self._mono

    # -- moving time --------------------------------------------------------------------
    def step(self, seconds: float) -> None:
        """Advance wall and monotonic time by ``seconds`` (>= 0) and wake all waiters."""
        if seconds < 0:
            raise ValueError("FakeClock.step takes a non-negative duration; use set_time")
        with self._lock:
            self._now += timedelta(seconds=seconds)
            self._mono += seconds
            self.__generation += 1
        self._wake()

    def set_time(self, when: datetime) -> None:
        """Jump wall time to ``when`` (forwards or backwards); monotonic time moves forward
        by the same amount when the jump is forward and stays put otherwise."""
        if when.tzinfo is None:
            raise ValueError("FakeClock.set_time needs a timezone-aware datetime")
        with self._lock:
            delta = (when - self._now).total_seconds()
            self._now = when.astimezone(UTC)
            if delta > 0:
                self._mono += delta
            self.__generation += 1
        self._wake()

    def waiters(self) -> int:
        """How many threads are currently blocked in ``wait``/``sleep`` on this clock."""
        with self._lock:
            return len(self._waiters)

    def wait_for_waiters(self, count: int, timeout: float = 5.0) -> bool:
        """Block (real time) until at least ``count`` threads wait on the clock."""
        with self._changed:
            return self._changed.wait_for(lambda: self.waiters() >= count, timeout)

    def _wake(self) -> None:
        with self._lock:
            conds = list(self._waiters.values())
        for cond in conds:
            with cond:
                cond.notify_all()

    def _register(self, cond: threading.Condition) -> int:
        with self._lock:
            self._next_id += 1
            wid = self._next_id
            self._waiters[wid] = cond
        with self._changed:
            self._changed.notify_all()
        return wid

    def _moved_since_read(self) -> bool:
        """Whether the clock moved after this thread last read it (see module docstring)."""
        seen = getattr(self.__readers, "generation", None)
        with self._lock:
            return seen is not None and seen != self.__generation

    def _unregister(self, wid: int) -> None:
        with self._lock:
            self._waiters.pop(wid, None)

    # -- waiting ------------------------------------------------------------------------
    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Release ``cond`` until notified, or until ``timeout`` fake seconds have passed.

        A step that does not reach the deadline still wakes the caller (a spurious wake-up
        the caller's predicate loop absorbs); that keeps this method simple and correct.
        """
        if timeout is not None and timeout <= 0:
            return
        wid = self._register(cond)
        try:
            # Checked once registered: a step after this check finds us registered and must
            # take ``cond`` (held by the caller until cond.wait releases it) to notify us.
            if not self._moved_since_read():
                cond.wait()
        finally:
            self._unregister(wid)

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        deadline = self.monotonic() + max(0.0, seconds)
        cond = threading.Condition(threading.Lock())
        wid = self._register(cond)
        try:
            while True:
                if stop.is_set():
                    return True
                if self.monotonic() >= deadline:
                    return False
                with cond:
                    cond.wait(_STOP_POLL_SECONDS)
        finally:
            self._unregister(wid)
