"""Time as pyctrl sees it.

Contract: nothing in pyctrl reads or waits on time except through a :class:`Clock`, so a
test can swap in :class:`pyctrl.testing.FakeClock` and move time by hand.

A Clock offers three readings and two ways to wait:

* ``now()``: wall time as an aware UTC ``datetime``; ``time()``: the same as epoch seconds.
* ``monotonic()``: seconds from an arbitrary origin that never goes backwards (use it for
  durations and deadlines, never for timestamps written to the API).
* ``wait(cond, timeout)``: the caller holds ``cond`` (a ``threading.Condition``); release it
  and block until notified or until ``timeout`` seconds of *this clock's* time pass. Spurious
  wake-ups are allowed, so callers re-check their predicate in a loop, exactly as with
  ``Condition.wait``.
* ``sleep(seconds, stop)``: block for ``seconds`` of this clock's time or until ``stop`` is
  set; returns True when ``stop`` was set.
"""

from __future__ import annotations

import threading
import time as _time
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "RealClock"]


@runtime_checkable
class Clock(Protocol):
    """The time source every pyctrl component takes (see module docstring)."""

    def now(self) -> datetime:
        """Wall time, timezone-aware, in UTC."""
        ...

    def time(self) -> float:
        """Wall time as seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """A never-decreasing reading in seconds for measuring durations."""
        ...

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Wait on ``cond`` (held by the caller) for at most ``timeout`` clock seconds."""
        ...

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        """Sleep ``seconds`` clock seconds unless ``stop`` is set first; True if stopped."""
        ...


class RealClock:
    """The process's real clocks: ``time.time``, ``time.monotonic`` and plain waits."""

    __slots__ = ()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def time(self) -> float:
        return _time.time()

    def monotonic(self) -> float:
        return _time.monotonic()

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        cond.wait(timeout)

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        return stop.wait(max(0.0, seconds))
