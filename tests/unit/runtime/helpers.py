"""Shared helpers for runtime unit tests: condition waits with real-time timeouts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pyctrl.testing.fake_clock import FakeClock


def eventually(pred: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    """Wait (real time, bounded) until ``pred()`` is true; fail the test otherwise."""
    deadline = time.monotonic() + timeout
    cond = threading.Condition()
    with cond:
        while not pred():
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout}s: {what}")
            cond.wait(0.002)


def step_until(clock: FakeClock, done: Callable[[], bool], what: str, *, step: float = 2.0,
               tries: int = 15) -> None:
    """Step ``clock`` by ``step`` (a retry period) at most ``tries`` times until ``done()``,
    giving the threads up to 0.5 s of real time to react after each step."""
    for _ in range(tries):
        try:
            eventually(done, timeout=0.5, what=what)
            return
        except AssertionError:
            clock.step(step)
    eventually(done, what=what)
