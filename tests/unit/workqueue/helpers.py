"""Shared helpers for the work queue tests: stepping the clock under a delaying queue."""

from __future__ import annotations

from pyctrl.testing import FakeClock
from pyctrl.workqueue import DelayingQueue
from tests.waiting import eventually


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
    eventually(lambda: waiter_passes(q) > before, what="the delay waiter to wake")
