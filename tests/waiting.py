"""Waiting on real servers and processes in integration tests, in one place.

Integration tests talk to a real API server, so they wait in real time, but always *for a
condition* with a timeout (never a bare sleep followed by an assertion). ``pause`` is the one
real-time pause the helpers use between polls, and for scenarios that act at a wall-clock
instant (killing a leader two seconds before a minute tick).
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


def elapsed_until(predicate: Callable[[], object], timeout: float,
                  interval: float = 0.02) -> float:
    """Seconds until ``predicate()`` became true; AssertionError after ``timeout``."""
    start = _CLOCK.monotonic()
    if poll(predicate, timeout, interval) is None:
        raise AssertionError(f"condition not met within {timeout}s")
    return _CLOCK.monotonic() - start
