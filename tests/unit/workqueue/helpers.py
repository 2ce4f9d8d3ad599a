"""Shared helpers for the work queue tests: condition waits with timeouts (never sleeps)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pyctrl.testing import FakeClock
from pyctrl.workqueue import DelayingQueue

WAIT_TIMEOUT = 5.0
_tick = threading.Event()  # never set: waiting on it is a bounded real-time poll


def wait_until(predicate: Callable[[], bool], timeout: float = WAIT_TIMEOUT) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` real seconds pass; return it."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return predicate()
        _tick.wait(0.001)
    return True


def waiter_passes(q: DelayingQueue[str]) -> int:
    with q._delay_cond:
        return q._waiter_passes


def step_and_settle(
    q: DelayingQueue[str], clock: FakeClock, seconds: float, clock_waiters: int = 1
) -> None:
    """Step the clock once the delay waiter is parked, then wait until it has looked at the
    new time (so a test can assert what it did, or did not, add)."""
    assert clock.wait_for_waiters(clock_waiters), "delay waiter never parked on the clock"
    before = waiter_passes(q)
    clock.step(seconds)
    assert wait_until(lambda: waiter_passes(q) > before), "delay waiter did not wake"
