"""Waiting for a condition in a test, in one place (unit, integration, e2e and node tests).

Every wait is *for a condition* with a timeout, never a bare sleep followed by an assertion:

* :func:`poll` returns the first truthy ``predicate()`` within ``timeout`` seconds, else None;
* :func:`eventually` is the asserting form: it returns that value or fails the test, naming
  ``what`` it waited for;
* :func:`steady` waits until a reading stops changing for ``still`` seconds;
* :func:`elapsed_until` measures how long a condition took.

Unit tests drive time with a FakeClock; they wait here only for other threads to react (the
default 2 ms interval). Integration tests talk to a real API server and wait in real time.
``pause`` is the one real-time pause, used between polls and by scenarios that act at a
wall-clock instant (killing a leader two seconds before a minute tick).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from pyctrl import RealClock

T = TypeVar("T")
_CLOCK = RealClock()


def pause(seconds: float) -> None:
    """Block for ``seconds`` of real time (between polls, or until a scheduled instant)."""
    if seconds > 0:
        threading.Event().wait(seconds)


def pause_until(when: datetime) -> None:
    """Block until the wall clock reaches ``when``."""
    pause((when - datetime.now(UTC)).total_seconds())


def poll(predicate: Callable[[], T], timeout: float, interval: float = 0.05) -> T | None:
    """Return the first truthy ``predicate()`` within ``timeout`` seconds, else None."""
    deadline = _CLOCK.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if _CLOCK.monotonic() >= deadline:
            return None
        pause(interval)


def eventually(predicate: Callable[[], T], timeout: float = 5.0, what: str = "condition",
               interval: float = 0.002) -> T:
    """The first truthy ``predicate()`` within ``timeout`` seconds; AssertionError otherwise."""
    value = poll(predicate, timeout, interval)
    if not value:
        raise AssertionError(f"condition not met within {timeout}s: {what}")
    return value


def steady(read: Callable[[], T], still: float, timeout: float, what: str = "reading",
           interval: float = 0.2) -> T:
    """``read()`` once it has not changed for ``still`` seconds; AssertionError when it keeps
    changing for ``timeout`` seconds."""
    last, since = read(), _CLOCK.monotonic()

    def settled() -> bool:
        nonlocal last, since
        now = read()
        if now != last:
            last, since = now, _CLOCK.monotonic()
        return _CLOCK.monotonic() - since >= still

    eventually(settled, timeout, f"{what} to stop changing", interval)
    return last


def elapsed_until(predicate: Callable[[], object], timeout: float,
                  interval: float = 0.02) -> float:
    """Seconds until ``predicate()`` became true; AssertionError after ``timeout``."""
    start = _CLOCK.monotonic()
    if poll(predicate, timeout, interval) is None:
        raise AssertionError(f"condition not met within {timeout}s")
    return _CLOCK.monotonic() - start
